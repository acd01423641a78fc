"""Coverage in the child processes of a test, while tools/covmap.py builds its line map.

``tools/covmap_plugin.py`` puts this directory first on a spawned child's ``PYTHONPATH``
(only while the map is built, never in the project's install), so every Python process
the test starts, directly or under ``mpiexec``, imports this module at start-up. It
records the lines of ``src/tapegrad`` that the child runs under the spawning test's
node id (``TAPEGRAD_COVMAP_CONTEXT``) in its own data file, which ``covmap.py``
combines with the others. A start marker is written before coverage starts and a done
marker after the data is saved (at exit, or before an ``exec``): a child that dies
without saving (killed, ``os._exit``, ``MPI_Abort``) leaves a start marker alone, and
its test is then run for every mutant (Note [Traced children] in tools/covmap.py).
"""

import os

_DATA = os.environ.get("TAPEGRAD_COVMAP_CHILD")
if _DATA:
    import atexit
    import json
    import uuid

    import coverage

    _token = f"{os.environ['TAPEGRAD_COVMAP_SPAWN']}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    _marks = os.environ["TAPEGRAD_COVMAP_MARKS"]
    with open(os.path.join(_marks, f"start.{_token}"), "w") as _fh:
        _fh.write(os.environ["TAPEGRAD_COVMAP_CONTEXT"])
    _cov = coverage.Coverage(
        data_file=f"{_DATA}.{_token}",  # covmap.py reads it only with a done marker
        include=[os.environ["TAPEGRAD_COVMAP_INCLUDE"]],
        config_file=False,
        context=os.environ["TAPEGRAD_COVMAP_CONTEXT"],
    )
    _cov.start()
    _saved = []
    import _covmap_default_reads  # this directory (Note [Default arguments] in covmap.py)

    _covmap_default_reads.install(
        os.path.dirname(os.path.dirname(os.environ["TAPEGRAD_COVMAP_INCLUDE"].rstrip("*/"))),
        lambda: os.environ["TAPEGRAD_COVMAP_CONTEXT"],
    )

    def _save():
        if _saved:
            return
        _saved.append(True)
        _cov.stop()
        _cov.save()
        reads = os.path.join(os.path.dirname(_DATA), f"reads-child.{_token}.json")
        with open(reads, "w") as fh:
            json.dump(_covmap_default_reads.snapshot(), fh)
        with open(os.path.join(_marks, f"done.{_token}"), "w") as fh:
            fh.write(os.environ["TAPEGRAD_COVMAP_CONTEXT"])

    atexit.register(_save)

    def _saving(exec_fn):
        def run(*args, **kwargs):
            _save()  # exec replaces the process: atexit would never run
            try:
                return exec_fn(*args, **kwargs)
            except BaseException:  # still this process, now untraced: not done after all
                os.remove(os.path.join(_marks, f"done.{_token}"))
                raise

        return run

    for _name in ("execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe"):
        setattr(os, _name, _saving(getattr(os, _name)))

    import subprocess

    _popen_init = subprocess.Popen.__init__
    _INHERIT = ("PYTHONPATH",) + tuple(k for k in os.environ if k.startswith("TAPEGRAD_COVMAP"))

    def _tracing_init(self, *args, **kwargs):
        """A grandchild is traced too, even when the child builds its environment afresh."""
        if kwargs.get("env") is not None:
            env = dict(kwargs["env"])
            site = os.path.dirname(os.path.abspath(__file__))
            path = env.get("PYTHONPATH")
            env["PYTHONPATH"] = site + (os.pathsep + path if path else "")
            env.update({k: os.environ[k] for k in _INHERIT[1:]})
            kwargs["env"] = env
        return _popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = _tracing_init
