"""JSON Schemas of the fusion package's published messages (package data)."""
