"""The errors the vastfake package raises. Every one is a VastfakeError."""

__all__ = ["VastfakeError", "BinaryNotFoundError", "StartError", "PortInUseError", "BrokerDiedError",
           "ControlPlaneError", "WaitTimeoutError", "WaitTimeout"]


class VastfakeError(Exception):
    """Anything the vastfake package raises."""


class BinaryNotFoundError(VastfakeError):
    """No vastfake binary was found, and none could be built; the message
    says how to get one."""


class StartError(VastfakeError):
    """The binary did not start: it exited, or printed no address in time.
    ``stderr`` is the tail of what it wrote to stderr."""

    def __init__(self, message: str, stderr: str = "", returncode=None):
        super().__init__(message)
        self.stderr = stderr
        self.returncode = returncode


class PortInUseError(StartError):
    """The address the broker (or its control plane) was told to listen on
    is taken by another process."""


class BrokerDiedError(VastfakeError):
    """The broker exited while a test was using it. ``stderr`` is the tail of
    what it wrote to stderr."""

    def __init__(self, message: str, stderr: str = "", returncode=None):
        super().__init__(message)
        self.stderr = stderr
        self.returncode = returncode


class ControlPlaneError(VastfakeError):
    """The control plane answered an error status, or did not answer.
    ``status`` is the HTTP status (None when there was no answer) and
    ``error`` the control plane's own message."""

    def __init__(self, message: str, status=None, error: str = ""):
        super().__init__(message)
        self.status = status
        self.error = error


class WaitTimeoutError(VastfakeError, AssertionError):
    """A wait's condition did not hold before its deadline. It is an
    AssertionError, so test runners report it as a failed check."""


WaitTimeout = WaitTimeoutError
"""The name WaitTimeoutError had before it was named as PEP 8 names exceptions; the same class."""
