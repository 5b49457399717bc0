"""``python -m vastfake [flags]`` runs the vastfake binary with the flags
given (``python -m vastfake -h`` lists them): the one a platform wheel
carries, so that a machine with Python and no Go toolchain has the broker
for development too. The binary is found as Broker finds it
(find_binary)."""

import os
import subprocess
import sys

from .broker import find_binary
from .errors import BinaryNotFoundError


def main() -> int:
    try:
        binary = find_binary()
    except BinaryNotFoundError as e:
        print("vastfake: %s" % e, file=sys.stderr)
        return 1
    args = [binary] + sys.argv[1:]
    if os.name == "posix":
        os.execv(binary, args)  # the broker takes this process over: signals reach it as they would vastfake's
    try:
        return subprocess.call(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
