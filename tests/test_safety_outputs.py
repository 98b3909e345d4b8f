"""Issue 30, items 1 and 6: outputs go to regular files only (a FIFO, socket or device is refused up front and
never replaced; a symlink is followed), new files get the umask's mode, and `basins`/`scaling` check their
outputs before any work. Everything happens in a temporary folder (never the real /dev/null)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from attnphase.errors import ParameterError
from attnphase.outputs import check_output_path, write_atomic

from _safety import error_line, run_cli


def _device(tmp_path: Path) -> Path:
    """A character device like /dev/null (1, 3) made in the temporary folder; skipped where mknod is not allowed."""
    p = tmp_path / "null"
    try:
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"no mknod here: {exc}")
    return p


def _fifo(tmp_path: Path) -> Path:
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


def _socket(tmp_path: Path) -> Path:
    p = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p


@pytest.mark.parametrize("make", [_fifo, _socket, _device], ids=["fifo", "socket", "device"])
def test_special_files_are_refused_and_never_replaced(tmp_path, make):
    """Old code: check_output_path accepted them and write_atomic's rename swapped them for a 0600 file."""
    p = make(tmp_path)
    kind = stat.S_IFMT(p.lstat().st_mode)
    with pytest.raises(ParameterError, match="regular file"):
        check_output_path(p)
    with pytest.raises(ParameterError, match="regular file"):
        write_atomic(p, lambda tmp: tmp.write_text("x"))
    assert stat.S_IFMT(p.lstat().st_mode) == kind                # still the FIFO / socket / device
    assert [q.name for q in tmp_path.iterdir()] == [p.name]      # no temporary file left


def test_cli_out_to_a_fifo_is_one_line_before_work(tmp_path, capsys):
    fifo = _fifo(tmp_path)
    slow = ["--d", "100", "--steps", "50000000", "--instances", "1"]      # would train for hours
    line = error_line(run_cli(capsys, "simulate", *slow, "--out", fifo))
    assert "--out" in line and "FIFO" in line
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_symlink_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert check_output_path(link) == target
    write_atomic(link, lambda tmp: tmp.write_text("new\n"))
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640           # a replaced file keeps its mode
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "sub" / "made.csv")
    write_atomic(dangling, lambda tmp: tmp.write_text("x\n"))
    assert dangling.is_symlink() and (tmp_path / "sub" / "made.csv").read_text() == "x\n"


def test_a_symlink_to_a_fifo_is_refused(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(_fifo(tmp_path))
    with pytest.raises(ParameterError, match="FIFO"):
        check_output_path(link)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_files_get_the_umask_mode(tmp_path, mask, mode):
    """Old code: every output was 0600 (mkstemp's mode) whatever the umask."""
    old = os.umask(mask)
    try:
        p = write_atomic(tmp_path / "f.csv", lambda tmp: tmp.write_text("x"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == mode


def test_failed_write_leaves_the_old_file(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("old")

    def boom(tmp):
        tmp.write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(p, boom)
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["f.csv"]


def test_folder_that_cannot_be_entered_is_one_line(tmp_path, monkeypatch):
    """``--out noexec/c.csv`` (a folder without search permission): root can enter any folder, so the refusal of
    the stat call is simulated. Old code: PermissionError traceback."""
    real = Path.stat

    def stat_(self, *a, **kw):
        if self.parent.name == "noexec":
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **kw)

    (tmp_path / "noexec").mkdir()
    monkeypatch.setattr(Path, "stat", stat_)
    monkeypatch.setattr(Path, "is_dir", lambda self: real(self).st_mode & 0o170000 == 0o040000)
    with pytest.raises(ParameterError, match="entered"):
        check_output_path(tmp_path / "noexec" / "c.csv")


def test_phase_diagram_refusal_leaves_no_folder(tmp_path, capsys):
    """Old code: the --out folder was created before the later checks, and stayed empty after exit 2."""
    out = tmp_path / "new" / "diagram"
    error_line(run_cli(capsys, "theory", "phase-diagram", "--out", out, "--sigma", "-1"))
    assert not (tmp_path / "new").exists()


BASINS = ["basins", "--alphas", "1", "--d", "100", "--instances", "1", "--optimizer", "gd", "--steps", "50000000"]


@pytest.mark.parametrize("opt", ["--out", "--figure"])
def test_basins_outputs_checked_before_work(tmp_path, capsys, opt):
    """Old code: the run (here: hours) came first, then a traceback; `--figure o` with o a folder wrote o.png."""
    (tmp_path / "afile").write_text("x")
    for bad, needle in ((tmp_path, "folder"), (tmp_path / "afile" / "x.png", "is a file"),
                        (Path("/proc/attnphase-nope/x.png"), "writable")):
        assert needle in error_line(run_cli(capsys, *BASINS, opt, bad))
    if opt == "--figure":
        assert "ending in" in error_line(run_cli(capsys, *BASINS, opt, tmp_path / "fig.xyz"))
        assert "ending in" in error_line(run_cli(capsys, *BASINS, opt, tmp_path / "fig"))
    assert sorted(q.name for q in tmp_path.iterdir()) == ["afile"]


def test_scaling_figure_checked_before_work(tmp_path, capsys):
    args = ["scaling", "--ds", "100,200", "--instances", "2", "--optimizer", "gd", "--steps", "50000000",
            "--no-theory", "--figure"]
    assert "folder" in error_line(run_cli(capsys, *args, tmp_path))
    assert "ending in" in error_line(run_cli(capsys, *args, tmp_path / "fig.unknown"))
