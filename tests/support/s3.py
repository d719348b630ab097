"""A local S3 for the tests: moto's server on 127.0.0.1, and a bucket per test for s3contents.

The server is a process of its own (``moto.server``, from ``moto[server]``), started once per
test session on a free port; each test's server gets a fresh bucket, so tests share nothing.
Only the tests marked ``s3`` use it, in the environment ``scripts/check.sh`` installs with
s3contents and moto (``.venv-s3``).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import free_port, stop_process, wait_for_http

#: moto accepts any credentials; these keep boto from looking for real ones.
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing"}
REGION = "us-east-1"


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a moto S3 server on 127.0.0.1, for the whole test session."""
    port = free_port()
    log = (tmp_path_factory.mktemp("moto") / "moto.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from moto.server import main; sys.exit(main(sys.argv[1:]))",
            "-H",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(url, process)
        yield url
    finally:
        stop_process(process)
        log.close()


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client of the local server (to look at the bucket behind the server's back)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=CREDENTIALS["access_key_id"],
        aws_secret_access_key=CREDENTIALS["secret_access_key"],
    )


def new_bucket(endpoint: str) -> str:
    """Create an empty bucket with a fresh name; return the name."""
    name = f"xcsh-{uuid.uuid4().hex[:16]}"
    s3_client(endpoint).create_bucket(Bucket=name)
    return name


def bucket_keys(endpoint: str, bucket: str) -> list[str]:
    """Every key in ``bucket``, sorted."""
    client = s3_client(endpoint)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return sorted(keys)


def local_files(*folders: Path) -> list[str]:
    """Every file under ``folders`` (relative paths, sorted): where a local copy could appear."""
    found = []
    for folder in folders:
        found.extend(
            str(path.relative_to(folder)) for path in folder.rglob("*") if not path.is_dir()
        )
    return sorted(found)
