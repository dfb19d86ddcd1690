"""The fixtures every end-to-end module uses: the async backend and the protocol modes.

pytest loads this file before the test modules, so its fixtures reach every one of them.
"""

import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(params=["auto", "legacy"])
def mode(request):
    """auto negotiates the newest revision (2026-07-28, server/discover); legacy uses initialize."""
    return request.param
