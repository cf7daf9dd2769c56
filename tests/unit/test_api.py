"""textbox.run (textbox/api.py) refuses to run in a spawned worker importing a script without the
``if __name__ == "__main__":`` guard (the tokenising workers are spawned: textbox.data.parallel)."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers import offline_env

UNGUARDED = '''
import multiprocessing
import sys

import textbox
from textbox.config.errors import TextBoxUserError

if __name__ == "__mp_main__":  # this script imported again by the spawned process below (no guard)
    try:
        textbox.run(model="transformer")
    except TextBoxUserError as error:
        print(error, file=sys.stderr)
        sys.exit(3)
else:  # what a tokenising worker's start does, without the tokenising
    process = multiprocessing.get_context("spawn").Process(target=print)
    process.start()
    process.join()
    print("worker exit code", process.exitcode)
'''


def test_a_run_called_while_a_spawned_worker_imports_the_script_is_refused(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], env=offline_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "worker exit code 3", done.stderr[-3000:]
    assert "textbox.run was called while a worker process imported your script" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
