"""Running kinspect as an unprivileged user (nobody, or a throwaway one), from a root test.

The project's venv interpreter usually lives somewhere that user cannot read (pyenv under
/root), so `user_python` makes a venv of the system's python for them whose site-packages
names, in a .pth file, the running venv's site-packages and the repository (found from this
file's path, as CI runs from a clone). `run_as` then runs a command as uid:gid with
`setpriv`, no supplementary groups (no docker group), and only the environment it is given.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

NOBODY = 65534  # uid and gid of nobody / nogroup on Debian
REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")


def reachable(path: Path) -> None:
    """Let other users traverse (not list) `path` and every directory above it: pytest's
    tmp_path sits under a 0700 directory (pytest makes it 0700 again next session)."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)


def others_reach(path: Path) -> bool:
    """Whether any user can get to `path`: every directory on the way is o+x."""
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in [path, *path.parents])


def user_python(tmp_path: Path) -> Path:
    """A python an unprivileged user can run, importing kinspect and this venv's packages.

    Skips (not fails) where it cannot be made: not root, no setpriv, or a system python of
    another minor version than this one (compiled packages would not load)."""
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root")
    if not shutil.which("setpriv"):
        pytest.skip("no setpriv (util-linux)")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not SYSTEM_PYTHON.exists() or subprocess.run(
            [str(SYSTEM_PYTHON), "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"],
            capture_output=True).returncode != 0:
        pytest.skip(f"no system python {version} at {SYSTEM_PYTHON}")
    venv = tmp_path / "user-venv"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{version}" / "site-packages"
    ours = dict.fromkeys([str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "kinspect-under-test.pth").write_text("".join(f"{line}\n" for line in ours))
    unreachable = [folder for folder in ours if not others_reach(Path(folder))]
    if unreachable:
        pytest.skip(f"other users cannot reach {unreachable[0]}")
    reachable(tmp_path)
    return venv / "bin" / "python"


def user_env(home: Path, uid: int = NOBODY, gid: int = NOBODY,
             path: str = "/usr/sbin:/usr/bin:/sbin:/bin", **extra: str) -> dict[str, str]:
    """A minimal environment for the user: HOME (made, and theirs), PATH, LANG, and `extra`."""
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, uid, gid)
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", **extra}


def run_as(uid: int, gid: int, argv: Sequence[str], env: Mapping[str, str],
           cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`argv` as uid:gid (no supplementary groups), with exactly `env`; output captured."""
    setpriv = shutil.which("setpriv") or "setpriv"  # found on our PATH, not `env`'s
    command = [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]
    return subprocess.run(command, env=dict(env), cwd=str(cwd or "/"), capture_output=True,
                          text=True, timeout=timeout)
