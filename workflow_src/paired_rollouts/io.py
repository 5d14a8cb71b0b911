"""File I/O shared by every stage: atomic writes, JSON Lines, hashes, settings.

Every output is written to a temporary file in the same folder and renamed into place, so a job that
dies never leaves a half-written file that Snakemake or a later stage could mistake for a result.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError


def os_error(exc: OSError, path: str | os.PathLike | None = None) -> UserError:
    """One line for a file-system fault: the path (``path`` if given: the file being written, not its
    temporary), the cause and its errno name (ENOSPC, EACCES, EROFS)."""
    name = errno.errorcode.get(exc.errno or 0, "error")
    where = path if path is not None else exc.filename
    cause = exc.strerror or str(exc)
    hint = {
        errno.ENOSPC: "free space on that file system and rerun",
        errno.EDQUOT: "free space on that file system and rerun",
        errno.EFBIG: "the file exceeds the file-size limit (ulimit -f); raise it and rerun",
        errno.EACCES: "make the folder writable (or choose another) and rerun",
        errno.EPERM: "make the folder writable (or choose another) and rerun",
        errno.EROFS: "write elsewhere and rerun",
    }.get(exc.errno or 0, "fix the path and rerun")
    return UserError(f"{where}: {cause} ({name}); {hint}")


def _tmp_prefix(target: Path) -> str:
    return f".{target.name}."


def _remove_stale_temporaries(target: Path) -> None:
    """Temporary files a killed write of ``target`` left behind (``.NAME.PID.XXXX.tmp`` whose process is
    gone) are removed before the next write of the same target."""
    prefix = _tmp_prefix(target)
    for tmp in target.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid_text = tmp.name[len(prefix) :].split(".", 1)[0]
        if pid_text.isdigit() and not _alive(int(pid_text)):
            try:
                if tmp.is_dir() and not tmp.is_symlink():
                    shutil.rmtree(tmp)  # a killed atomic_write_folder's
                else:
                    tmp.unlink(missing_ok=True)
            except OSError:
                continue  # not ours to fail on: the write goes ahead


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process is not writing it now: a write of ours that was interrupted
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename). A file-system fault (full disk,
    read-only or unwritable folder) is one UserError naming the path and the cause; nothing is left."""
    return atomic_write_all([(path, data)])[0]


def atomic_write_all(outputs: Sequence[tuple[str | os.PathLike, bytes]]) -> list[Path]:
    """Write several outputs of one command all or none: each is written in full to a temporary file
    beside its target first, and only when every one is on disk are they renamed into place, so a bad
    second path (a missing or unwritable folder) leaves no first output behind."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs:
            staged.append((_stage(Path(path), data), Path(path)))
        for tmp, target in staged:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise os_error(exc, target) from None
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    return [target for _, target in staged]


def _stage(target: Path, data: bytes) -> str:
    """``data`` in a fsynced temporary file beside ``target`` (its permissions those of a plain open());
    returns the temporary file's path. Nothing is left on failure."""
    _check_output(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(target)
        fd, tmp = tempfile.mkstemp(
            dir=target.parent, prefix=f"{_tmp_prefix(target)}{os.getpid()}.", suffix=".tmp"
        )
    except OSError as exc:
        raise os_error(exc, target) from None
    try:
        # mkstemp creates 0600; give the file the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise os_error(exc, target) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def check_writable_folder(folder: str | os.PathLike, what: str = "--out") -> Path:
    """Create ``folder`` if needed and prove a file can be written there, before long work whose result
    would otherwise be lost (one UserError naming the folder and the cause)."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UserError(f"{what} {path}: is a file; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise os_error(exc, path) from None
    return path


def atomic_write_folder(
    folder: str | os.PathLike, write: Callable[[Path], None], what: str = "--out"
) -> Path:
    """Fill a folder output all or none: ``write`` fills a temporary folder beside ``folder``
    (``.NAME.PID.XXXX.tmp``), which replaces ``folder`` only when it returns. A failed write (a full disk,
    an unwritable folder, a library's own write error) is one UserError naming ``folder``; nothing of it
    is left, and an earlier ``folder`` stays as it was."""
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise UserError(f"{what} {target}: is a file; give a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temporaries(target)
        tmp = Path(
            tempfile.mkdtemp(dir=target.parent, prefix=f"{_tmp_prefix(target)}{os.getpid()}.", suffix=".tmp")
        )
    except OSError as exc:
        raise os_error(exc, target) from None
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp creates 0700; give it a plain mkdir's permissions
        try:
            write(tmp)
        except (UserError, KeyboardInterrupt):
            raise
        except OSError as exc:
            raise os_error(exc, target) from None
        except Exception as exc:  # e.g. the tokenizers library's write errors are plain Exceptions
            raise UserError(
                f"{target}: could not be written ({' '.join(str(exc).split())}); "
                "free space or fix the folder and rerun"
            ) from None
        try:
            _swap_in(tmp, target)
        except OSError as exc:
            raise os_error(exc, target) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _swap_in(tmp: Path, target: Path) -> None:
    """Rename the finished folder ``tmp`` to ``target``; an earlier ``target`` is moved aside first and
    removed after, or put back if the rename fails."""
    if not target.exists():
        tmp.rename(target)
        return
    old = Path(
        tempfile.mkdtemp(dir=target.parent, prefix=f"{_tmp_prefix(target)}{os.getpid()}.old.", suffix=".tmp")
    )
    target.rename(old / target.name)
    try:
        tmp.rename(target)
    except OSError:
        (old / target.name).rename(target)  # the earlier folder back in place
        old.rmdir()
        raise
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def dumps_json(obj: Any) -> str:
    """The one JSON style for registers: sorted keys, indent 2, trailing newline (NaN is refused)."""
    try:
        return json.dumps(obj, sort_keys=True, indent=2, allow_nan=False) + "\n"
    except ValueError as exc:
        raise UserError(
            f"a register value is NaN or infinite ({exc}); the computation that made it is "
            "undefined on these inputs"
        ) from exc


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, dumps_json(obj))


def jsonl_line(record: dict[str, Any]) -> str:
    """One JSON Lines record: sorted keys, compact, so equal records give equal bytes."""
    try:
        return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    except ValueError as exc:
        raise UserError(f"a record value is NaN or infinite ({exc})") from exc


def _no_constants(name: str) -> Any:
    """``json.loads`` hook: NaN and Infinity are not JSON; our writers never produce them."""
    raise ValueError(f"{name} is not a JSON number")


def loads_strict(text: str) -> Any:
    """Parse JSON refusing NaN/Infinity (the writers refuse them, so a file holding one was edited)."""
    return json.loads(text, parse_constant=_no_constants)


def _check_output(target: Path) -> None:
    """An output path that names a folder, or lies under a file, is refused before anything is written."""
    if target.is_dir():
        raise UserError(f"{target}: is a directory; give a file path")
    for ancestor in target.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise UserError(f"{target}: {ancestor} is a file, not a folder; choose another path")
            break


def jsonl_bytes(records: Iterable[dict[str, Any]]) -> bytes:
    """The bytes of a JSONL file of ``records`` (for writers that write several files at once)."""
    return "".join(jsonl_line(r) for r in records).encode("utf-8")


def atomic_write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> Path:
    return atomic_write_bytes(path, jsonl_bytes(records))


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` as a Path if it is a file; a folder or nothing there is one UserError saying which."""
    source = Path(path)
    if source.is_dir():
        raise UserError(f"{source}: is a folder; give the {what} itself")
    if not source.is_file():
        raise UserError(f"{source}: {what} not found")
    return source


def iter_jsonl_numbered(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) of a JSON Lines file; bad bytes, JSON or NaN: UserError with file:line."""
    source = require_file(path)
    with source.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserError(
                    f"{source}:{number}: not UTF-8 (byte {exc.start}); regenerate the file"
                ) from exc
            if not line.strip():
                continue
            try:
                record = loads_strict(line)
            except json.JSONDecodeError as exc:
                raise UserError(
                    f"{source}:{number}: not valid JSON ({exc.msg}); regenerate the file"
                ) from exc
            except ValueError as exc:
                raise UserError(f"{source}:{number}: {exc}; regenerate the file") from exc
            if not isinstance(record, dict):
                raise UserError(f"{source}:{number}: expected a JSON object per line")
            yield number, record


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSON Lines file; a malformed line is a UserError naming file and line."""
    for _, record in iter_jsonl_numbered(path):
        yield record


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    return list(iter_jsonl(path))


def read_json(path: str | os.PathLike) -> Any:
    return parse_json_file(require_file(path), "; regenerate the file")


def read_text_utf8(source: Path) -> str:
    """A file's text; non-UTF-8 bytes are an error naming the file (never silently replaced)."""
    try:
        return source.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source.read_bytes()[: exc.start].count(b"\n") + 1
        raise UserError(f"{source}:{line}: not UTF-8 (byte offset {exc.start}); regenerate the file") from exc


def yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: where it is (line and column, 1-based) and what the parser expected.
    PyYAML's own text spans several lines (the offending line and a caret under it)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{' '.join(str(problem).split())}"


def parse_json_file(source: Path, what: str = "") -> Any:
    text = read_text_utf8(source)
    try:
        return loads_strict(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg}){what}") from exc
    except ValueError as exc:
        raise UserError(f"{source}: {exc}; regenerate the file") from exc


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_settings(value: str | None, option: str = "--settings") -> dict[str, Any]:
    """Parse a ``--settings`` (or ``--conditions``) argument: inline JSON, or ``@path`` to a JSON/YAML
    file, or None -> {}."""
    if value is None or value == "":
        return {}
    what = f"{option.lstrip('-')} file"  # "settings file", "conditions file"
    if value.startswith("@"):
        path = require_file(value[1:], what)
        if path.suffix in {".yaml", ".yml"}:
            import yaml

            try:
                data = yaml.safe_load(read_text_utf8(path))
            except yaml.YAMLError as exc:
                raise UserError(f"{what} {path}: not valid YAML ({yaml_problem(exc)}); fix the file") from exc
        else:
            data = parse_json_file(path, f"; fix the {what}")
    else:
        try:
            data = loads_strict(value)
        except ValueError as exc:
            raise UserError(f"{option} is not valid JSON: {getattr(exc, 'msg', exc)}") from exc
    if not isinstance(data, dict):
        raise UserError(f"{option} {value[:60]!r} must be a JSON object")
    return data


def remove_tree_inside(path: str | os.PathLike, root: str | os.PathLike) -> None:
    """Delete folder ``path`` only if it lies strictly inside ``root`` (both resolved, links followed).

    A configured path is never trusted with a recursive delete: a value with a space, ``..`` or a link
    pointing elsewhere is refused instead of removing something outside the results tree.
    """
    target = Path(path).resolve()
    boundary = Path(root).resolve()
    if target == boundary or boundary not in target.parents:
        raise UserError(
            f"{path}: refusing to delete a folder outside {root}/; set it to a path under {root}/"
        )
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        raise UserError(f"{path}: is a file, not a folder; remove it or choose another path under {root}/")
