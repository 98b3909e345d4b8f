"""Shared helpers of the tests/test_safety_*.py files (issue 30): run the CLI in this process and read its
one-line error."""

from __future__ import annotations

import subprocess

from attnphase.cli import main


def run_cli(capsys, *args: str) -> subprocess.CompletedProcess:
    """``attnphase ARGS`` in this process; returns (code, stdout, stderr) as a CompletedProcess."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def error_line(p: subprocess.CompletedProcess) -> str:
    """The single stderr line of a refused command (fails the test on a traceback or several lines)."""
    lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]
