import pytest

import vastfake


@pytest.fixture(scope="session")
def vastfake_bin():
    """The binary the plugin's broker runs, for tests that start their own."""
    return vastfake.find_binary()
