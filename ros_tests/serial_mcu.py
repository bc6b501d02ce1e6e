"""What the serial tests share (issue 27): the MCU library built for the host and run on a
pseudo-terminal (mcu/host/loopback_main.c, the program serial/tests uses), the firmware under
qemu-system-arm with its UART on a pty, a relay between two ptys (a fixed port path for the
host while MCUs come and go, and 1% of bytes dropped or corrupted when asked), and who holds a
port's lock."""

from __future__ import annotations

import errno
import fcntl
import os
import random
import re
import select
import shutil
import subprocess
import threading
import time
import tty
from pathlib import Path

import harness

REPO = Path(__file__).resolve().parent.parent
MCU = REPO / "mcu"


def build_loopback(out_dir: Path) -> Path | None:
    """The host build of the MCU library with its loopback node, or None without `cc`."""
    if shutil.which("cc") is None:
        return None
    out = out_dir / "loopback_main"
    subprocess.run(
        ["cc", "-std=c99", "-O2", "-DTRACER_MCU_MAX_MSG=1100", str(MCU / "tracer_mcu.c"),
         str(MCU / "host/loopback_main.c"), "-o", str(out)],
        check=True,
    )
    return out


class Mcu:
    """loopback_main on a pty of its own: COUNT counter values, one every PERIOD_MS, on
    /mcu/counter (reliable when `reliable`), /mcu/led echoed on /mcu/echo (best effort when
    `led_best_effort`). Node /mcu_host. Stops when closed (its stdin reaches EOF)."""

    def __init__(self, exe: Path, nonce: int, count: int = 100000, period_ms: int = 10,
                 reliable: bool = True, led_best_effort: bool = False) -> None:
        flags = (1 if reliable else 0) | (2 if led_best_effort else 0)
        self.proc = subprocess.Popen(
            [str(exe), str(count), str(flags), "4", hex(nonce), str(period_ms), "pty"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()
        m = re.match(r"pty (\S+)", line)
        assert m, f"loopback_main said {line!r}"
        self.path = m.group(1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


class Qemu:
    """The firmware of mcu/firmware under qemu-system-arm -M lm3s6965evb, its UART on a pty."""

    def __init__(self, elf: Path, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            ["qemu-system-arm", "-M", "lm3s6965evb", "-nographic", "-monitor", "none",
             "-nic", "none", "-chardev", "pty,id=uart0", "-serial", "chardev:uart0",
             "-kernel", str(elf)],
            stdin=subprocess.DEVNULL, stdout=open(log, "w"), stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        self.path = None
        while time.monotonic() < deadline and self.path is None:
            m = re.search(r"char device redirected to (\S+)", log.read_text())
            if m:
                self.path = m.group(1)
            elif self.proc.poll() is not None:
                break
            else:
                time.sleep(0.05)
        assert self.path, f"qemu gave no pty: {log.read_text()}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


def build_firmware(out_dir: Path) -> tuple[Path | None, str]:
    """mcu/build's firmware.elf built into `out_dir`, or None and why not."""
    if shutil.which("arm-none-eabi-gcc") is None:
        return None, "arm-none-eabi-gcc not found (tools/setup or mcu/setup-deps installs it)"
    if shutil.which("qemu-system-arm") is None:
        return None, "qemu-system-arm not found (tools/setup or mcu/setup-deps installs it)"
    r = subprocess.run(["make", "-s", "-C", str(MCU), f"BUILD={out_dir}", str(out_dir / "firmware.elf")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return out_dir / "firmware.elf", ""


class Relay:
    """A pty whose slave path (`path`) the host opens as its port, relayed to an MCU's pty,
    which can be swapped (an MCU that reboots behind the same port). With `loss`, each byte
    either way is dropped or corrupted with that probability (seeded, so a run can be
    repeated)."""

    def __init__(self, loss: float = 0.0, seed: int = 27) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        os.set_blocking(self.master, False)
        self.loss = loss
        self.rng = random.Random(seed)
        self.mcu_fd: int | None = None
        self.lock = threading.Lock()
        self.stop = False
        self.mangled = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def attach(self, mcu_path: str | None) -> None:
        with self.lock:
            if self.mcu_fd is not None:
                os.close(self.mcu_fd)
            self.mcu_fd = None
            if mcu_path is not None:
                fd = os.open(mcu_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
                self.mcu_fd = fd

    def _mangle(self, data: bytes) -> bytes:
        if not self.loss:
            return data
        out = bytearray()
        for b in data:
            r = self.rng.random()
            if r < self.loss / 2:
                self.mangled += 1
                continue
            if r < self.loss:
                self.mangled += 1
                b ^= self.rng.randrange(1, 256)
            out.append(b)
        return bytes(out)

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        """All of `data`, waiting up to 50 ms for room each time the pty is full; what still
        does not fit is dropped, as on a line nobody reads."""
        while data:
            try:
                data = data[os.write(fd, data):]
            except OSError as e:
                if e.errno == errno.EIO:  # the other end is gone
                    return
                if e.errno != errno.EAGAIN:
                    raise
                if not select.select([], [fd], [], 0.05)[1]:
                    return

    def _run(self) -> None:
        while not self.stop:
            with self.lock:
                fds = [self.master] + ([self.mcu_fd] if self.mcu_fd is not None else [])
            try:
                ready, _, _ = select.select(fds, [], [], 0.05)
            except (OSError, ValueError):
                continue
            with self.lock:
                for fd in ready:
                    if fd not in (self.master, self.mcu_fd):
                        continue
                    try:
                        data = os.read(fd, 4096)
                    except OSError:
                        data = b""
                    if not data:
                        if fd == self.mcu_fd:  # the MCU is gone: its pty hung up
                            os.close(fd)
                            self.mcu_fd = None
                        continue
                    if fd == self.master:
                        if self.mcu_fd is not None:
                            self._write(self.mcu_fd, self._mangle(data))
                    else:
                        self._write(self.master, self._mangle(data))

    def close(self) -> None:
        self.stop = True
        self.thread.join(timeout=5)
        self.attach(None)
        os.close(self.master)
        os.close(self.slave)


def lock_file(env: dict[str, str], port: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9.]", "_", port)
    return Path(env["RMW_TRACER_RENDEZVOUS_DIR"]) / f"serial-{name}.lock"


def port_held(env: dict[str, str], port: str) -> bool:
    """Whether some process holds the port's lock (the election, rmw_tracer/src/serial_link)."""
    path = lock_file(env, port)
    if not path.exists():
        return False
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def wait_until(cond, timeout: float, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def worker(mode: str, *args: str, env: dict[str, str], timeout: float = 60) -> harness.Proc:
    """ros_tests/serial_worker.py in a process of its own."""
    return harness.spawn_python(Path(__file__).parent / "serial_worker.py", [mode, *args],
                                env=env, timeout=timeout)
