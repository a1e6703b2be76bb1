"""Helpers shared by test modules (processes, schemas, scenes, strategies). Test modules import
from here, never from one another."""
