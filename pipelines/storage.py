"""Files on a local disk, on ``gs://`` or on any other Beam filesystem, written whole or not at
all: read, created only where none exists, written atomically, removed, listed.

Local paths use the operating system (``O_EXCL``, a rename within the folder, ``fsync``);
``gs://`` uses Cloud Storage through Beam's client (its credentials and
``STORAGE_EMULATOR_HOST``): an exclusive create is an upload with the precondition
``ifGenerationMatch=0``, and every write is one upload, which Cloud Storage makes visible whole or
not at all. Any other Beam filesystem gets Beam's ``FileSystems``, its exclusive create in two
steps (a test, then a write).
"""

from __future__ import annotations

import os

from pipelines.options import one_line

__all__ = ["create_exclusive", "is_local", "list_files", "read_bytes", "remove", "write_atomic", "write_whole"]


def is_local(path: str) -> bool:
    return "://" not in path


def _gcs_blob(path: str):
    """The ``google.cloud.storage`` blob of ``gs://BUCKET/NAME``, through Beam's client (its
    credentials, ``STORAGE_EMULATOR_HOST``)."""
    from apache_beam.io.gcp.gcsio import GcsIO, parse_gcs_path

    bucket, name = parse_gcs_path(path)
    return GcsIO().client.bucket(bucket).blob(name)


def read_bytes(path: str) -> bytes | None:
    """The bytes of file ``path``, ``None`` if there is none.

    Raises:
        OSError: It exists and cannot be read (a folder, no permission).
    """
    if is_local(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
    if path.startswith("gs://"):
        from google.api_core.exceptions import NotFound

        try:
            return _gcs_blob(path).download_as_bytes()
        except NotFound:
            return None
    from apache_beam.io.filesystems import FileSystems

    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read()


def create_exclusive(path: str, data: bytes) -> bool:
    """Create file ``path`` holding ``data`` only if no file of that name exists; ``False`` if one
    does (on a Beam filesystem other than local and ``gs://`` the test and the create are two steps).

    Raises:
        OSError: It cannot be created (no permission, a read-only filesystem, a full disk).
    """
    if is_local(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, data)
            os.fsync(fd)
        except OSError:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        return True
    if path.startswith("gs://"):
        from google.api_core.exceptions import GoogleAPIError, PreconditionFailed

        try:
            _gcs_blob(path).upload_from_string(data, content_type="application/json", if_generation_match=0)
        except PreconditionFailed:
            return False
        except GoogleAPIError as err:
            raise OSError(one_line(err, 200)) from None
        return True
    from apache_beam.io.filesystems import FileSystems

    if FileSystems.exists(path):
        return False
    write_whole(path, data)
    return True


def write_whole(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` on a Beam filesystem in one request (``gs://``: one upload, atomic)."""
    if path.startswith("gs://"):
        from google.api_core.exceptions import GoogleAPIError

        try:
            _gcs_blob(path).upload_from_string(data)
        except GoogleAPIError as err:
            raise OSError(one_line(err, 200)) from None
        return
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.create(path) as f:
        f.write(data)


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the whole file or none: locally into
    ``_NAME.tmp-PID`` beside it (``fsync``), renamed over ``path``; on ``gs://`` one upload.

    Raises:
        OSError: It cannot be written (a full disk, no permission); no file is left at ``path``
            nor at the temporary name.
    """
    if not is_local(path):
        write_whole(path, data)
        return
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f"_{name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        remove(temporary)
        raise
    _sync_folder(folder or ".")


def _sync_folder(folder: str) -> None:
    """``fsync`` a local folder (a rename in it survives a crash); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove(path: str) -> None:
    """Delete file ``path`` if it is there (never raises: a failed clean-up leaves a ``_`` name, which
    no reader takes as data, or an uncommitted output)."""
    try:
        if is_local(path):
            os.unlink(path)
        elif path.startswith("gs://"):
            _gcs_blob(path).delete()
        else:
            from apache_beam.io.filesystems import FileSystems

            FileSystems.delete([path])
    except Exception:  # not there, or no permission
        pass


def list_files(output: str, sub: str) -> list[tuple[str, int]]:
    """Every file under ``output/sub`` (relative to ``output``) and its size."""
    folder = f"{output}/{sub}"
    if is_local(output):
        listed = []
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                try:
                    size = os.path.getsize(path)
                except FileNotFoundError:  # moved meanwhile (another writer's temporary file)
                    continue
                listed.append((os.path.relpath(path, output).replace(os.sep, "/"), size))
        return listed
    from apache_beam.io.filesystems import FileSystems

    try:
        matched = FileSystems.match([f"{folder}/**"])[0].metadata_list
    except Exception:  # no such folder
        return []
    return [(m.path[len(output) + 1 :], m.size_in_bytes) for m in matched]
