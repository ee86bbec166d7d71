"""`cq data get` (issue 57 item 8): a read-only --dir is one line, not `OSError: [Errno 30]`; a mirror dripping
bytes is stopped (a whole-file bound, not only --timeout per read); a downloaded zip that is no zip is not kept at
its final name; a killed download's `.FILE.part-PID` is removed by the next get."""
import errno
import os

from cqtools import data

from .test_data import _get, pinned_to_the_served_files, server, served_under_files  # noqa: F401 (fixtures)


def test_a_read_only_dir_is_one_line(runner, tmp_path, monkeypatch, served_under_files):  # noqa: F811
    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    monkeypatch.setattr(os, "makedirs", read_only)
    result = _get(runner, "ambignq-light", "--dir", str(tmp_path / "ro"), "--mirror", served_under_files)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "cannot write into" in result.stderr and "Read-only file system" in result.stderr


def test_a_dead_downloads_part_is_removed(runner, tmp_path, served_under_files):  # noqa: F811
    root = tmp_path / "data"
    (root / "ambignq").mkdir(parents=True)
    stale = root / "ambignq" / ".ambignq_light.zip.part-999999999"  # no such pid
    stale.write_bytes(b"half")
    result = _get(runner, "ambignq-light", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code == 0, result.stderr
    assert not stale.exists()
    assert not [p.name for p in (root / "ambignq").iterdir() if ".part-" in p.name]


def test_a_bad_zip_is_not_kept_at_its_final_name(runner, tmp_path, monkeypatch, server):  # noqa: F811
    url, served = server
    (served / "files").mkdir()
    (served / "files" / "ambignq_light.zip").write_bytes(b"not a zip at all")
    ds = data.DATASETS["ambignq-light"]
    monkeypatch.setitem(data.DATASETS, "ambignq-light", data.Dataset(**{**ds.__dict__, "sha256": None,
                                                                      "git_blob": None, "check": None}))
    root = tmp_path / "data"
    result = _get(runner, "ambignq-light", "--dir", str(root), "--mirror", url)
    assert result.exit_code == 1 and "is not a zip archive" in result.stderr and "it is removed" in result.stderr
    assert not (root / "ambignq" / "ambignq_light.zip").exists()


def test_a_dripping_mirror_is_stopped(monkeypatch, tmp_path):
    import io

    class Drip(io.RawIOBase):
        headers = {}

        def readable(self):
            return True

        def read1(self, n):
            return b"x"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    clock = iter(range(0, 10_000, 10))
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    monkeypatch.setattr("urllib.request.urlopen", lambda url, timeout: Drip())
    ds = data.DATASETS["ambignq-light"]
    try:
        data._download(ds, "http://mirror/ambignq_light.zip", str(tmp_path / "ambignq_light.zip"), timeout=60)
    except data.ResourceError as err:
        assert "under 10 KiB/s on average after --timeout 60 s" in str(err)
    else:
        raise AssertionError("a drip of one byte a read was not stopped")
    assert os.listdir(tmp_path) == []
