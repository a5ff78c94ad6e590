"""`bindy-agent run` stops on SIGTERM whichever of its threads the kernel hands the signal to."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The signal is handed to a worker thread, as the kernel may do with a kubelet's SIGTERM to a busy agent:
# the main thread blocked in its wait is not woken by it.
CHILD = textwrap.dedent("""
    import signal, threading, time
    from agent.cli import run

    stop = run.stop_requested()
    def worker():
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        time.sleep(30)  # a thread still busy, as the agent's are
    threading.Thread(target=worker, daemon=True).start()
    run.wait_until(stop)
    print("stopped")
""")


def test_sigterm_delivered_to_a_worker_thread_still_stops_the_agent() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
