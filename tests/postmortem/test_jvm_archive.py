"""The driver's JVM options around the class archive (no JVM started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinspect.postmortem.spark import jvm_archive


def test_the_archive_is_used_only_once_it_has_its_name(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    path = jvm_archive.archive_path()
    assert path.is_relative_to(tmp_path)
    options = jvm_archive.driver_options()
    assert not any("SharedArchiveFile" in o for o in options)  # none yet: classes as before
    assert options[:2] == ["-Xlog:disable", "-Xlog:all=warning:stderr"]  # never on stdout
    path.parent.mkdir(parents=True)
    path.with_name(path.name + ".123.tmp").write_bytes(b"half an archive")
    assert not any("SharedArchiveFile" in o for o in jvm_archive.driver_options())
    path.write_bytes(b"an archive")
    assert f"-XX:SharedArchiveFile={path}" in jvm_archive.driver_options()


def test_the_child_that_makes_it_dumps_instead(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jvm_archive.DUMP_ENV, str(tmp_path / "new.jsa"))
    options = jvm_archive.driver_options()
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}" in options
    assert not any("SharedArchiveFile" in o for o in options)


def test_the_child_it_starts_is_the_warm_up_that_dumps(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """build() runs `python -m DUMPER --dump PATH`: a module that does not exist, or one that
    does not take those words, would only ever say "no Spark class archive"."""
    import importlib

    dumper = importlib.import_module(jvm_archive.DUMPER)
    dumped: list[Path] = []
    monkeypatch.setattr(dumper, "dump_class_archive", dumped.append)
    assert dumper.main(["--dump", str(tmp_path / "new.jsa")]) == 0
    assert dumped == [tmp_path / "new.jsa"]
    assert dumper.main([]) == 2 and dumper.main(["--dump"]) == 2
    assert dumped == [tmp_path / "new.jsa"]
