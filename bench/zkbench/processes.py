"""zkbench.processes: every process the benchmark starts, and how it is
stopped.  spawn() records each child in PROCS; stop_spawned() ends, by pid,
those still running when the benchmark exits.  run() runs a command to its
end; Driver talks to a driver (Java, Python, C) line by line.
"""

import os
import subprocess
import time

PROCS = []


class BenchError(Exception):
    pass


def spawn(cmd, **kw):
    p = subprocess.Popen(cmd, **kw)
    PROCS.append(p)
    return p


def stop_spawned():
    live = [p for p in PROCS if p.poll() is None]
    for p in live:
        try:
            p.terminate()
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    PROCS.clear()


def run(cmd, timeout=300, cwd=None):
    p = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise BenchError("%s timed out after %ds" % (os.path.basename(cmd[0]), timeout))
    finally:
        if p in PROCS:
            PROCS.remove(p)
    if p.returncode != 0:
        raise BenchError("%s exited with %d: %s" % (os.path.basename(cmd[0]), p.returncode,
                                                    err.strip()[-1500:]))
    return out


class Driver:
    """A driver (Java, Python, C) whose stdout is read line by line."""

    def __init__(self, cmd, log):
        self.cmd = cmd
        self.p = spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=log, text=True, bufsize=1)

    def line(self, timeout=120):
        import select
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                raise BenchError("%s: no output for %ds" % (os.path.basename(self.cmd[0]), timeout))
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                text = self.p.stdout.readline()
                if text == "":
                    self.p.wait()
                    raise BenchError("%s exited with %s; see bench.log"
                                     % (os.path.basename(self.cmd[0]), self.p.returncode))
                return text.rstrip("\n")

    def expect(self, prefix, timeout=120):
        text = self.line(timeout)
        if not text.startswith(prefix):
            raise BenchError("%s: expected %r, got %r" % (os.path.basename(self.cmd[0]),
                                                          prefix, text[:200]))
        return text[len(prefix):].strip()

    def send(self, text="go"):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def finish(self, timeout=60):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait(timeout=timeout)
        if self.p in PROCS:
            PROCS.remove(self.p)

