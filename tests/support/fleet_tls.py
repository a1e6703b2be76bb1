"""Certificates made at test time (the openssl command line; no key is ever committed), and the
worked Zenoh configurations of docs/zenoh/ pointed at them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "zenoh"
EXAMPLE_DIR = "/etc/gizmo/"  # where the worked examples keep their certificates


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)


def make_certs(where: Path, *names: str) -> None:
    """A fleet CA (``fleet-ca.pem``), and for each name ``<name>.pem`` and ``<name>-key.pem``:
    a P-256 certificate with that common name, valid for localhost and 127.0.0.1, signed by
    the CA. A second CA's ``stranger`` certificate too: same names, another authority."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    where.mkdir(parents=True, exist_ok=True)
    for ca in ("fleet-ca", "stranger-ca"):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", str(where / f"{ca}-key.pem"),
                 "-out", str(where / f"{ca}.pem"), "-days", "2", "-subj", f"/CN={ca}")  # fmt: skip
    extensions = where / "san.ext"
    extensions.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, ca in [*((n, "fleet-ca") for n in names), ("stranger", "stranger-ca")]:
        common = "uav1" if name == "stranger" else name  # the stranger claims to be uav1
        request = where / f"{name}.csr"
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", str(where / f"{name}-key.pem"), "-out", str(request),
                 "-subj", f"/CN={common}")  # fmt: skip
        _openssl("x509", "-req", "-in", str(request), "-CA", str(where / f"{ca}.pem"),
                 "-CAkey", str(where / f"{ca}-key.pem"), "-CAcreateserial",
                 "-out", str(where / f"{name}.pem"), "-days", "2",
                 "-extfile", str(extensions))  # fmt: skip


def example(name: str, where: Path, **names: str) -> str:
    """docs/zenoh/``name`` with its certificate paths in ``where`` (and a file name changed
    for another, e.g. ``uav1="uav2"``); the path of the copy."""
    text = (DOCS / name).read_text().replace(EXAMPLE_DIR, f"{where}/")
    for old, new in names.items():
        text = text.replace(f"/{old}.pem", f"/{new}.pem").replace(f"/{old}-key", f"/{new}-key")
    path = where / f"{name.removesuffix('.json5')}-{'-'.join(names.values()) or 'as-is'}.json5"
    path.write_text(text)
    return str(path)
