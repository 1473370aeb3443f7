"""The HTTP API (``episodic serve``): a thin shell over one ``Episodic``.

Every ``/v1`` route needs a bearer API key (``episodic keys create``); the key binds the
caller to one workspace and, through its role, to a recall scope (``episodic.tenancy``).
Each route parses its body into a pydantic model, calls one service method and shapes the
answer; errors become JSON bodies through one table (``ERROR_STATUS``). Vectors never
leave the server: no response model has a field for one.

``GET /healthz`` needs no key. ``/ui`` is the operator's page (``episodic.ui``).

Where things are: ``app`` builds the app and includes the routers; ``routers/`` holds one
module per resource with the models it alone uses; ``models`` the models several routers
share; ``errors`` the error table, bodies and handlers; ``auth`` the caller's key;
``deps`` the service and the load bounds as dependencies; ``limits`` the body size limit,
the lines of recalls and of writes (503 + Retry-After past their bounds). The names below
are this package's public face.
"""

from episodic.http.app import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    app_from_env,
    asgi,
    create_app,
    start_background_jobs,
)
from episodic.http.auth import Caller, bearer_secret, principal
from episodic.http.errors import (
    BUSY_RETRY_AFTER_S,
    ERROR_STATUS,
    ERRORS,
    error_body,
    error_status,
)
from episodic.http.limits import (
    MAX_BODY_BYTES,
    RECALL_MAX_WAIT_S,
    RECALL_PROCESSES,
    RECALL_SLOTS,
    WRITE_MAX_WAIT_S,
    WRITE_SLOTS,
    BodyLimit,
    Lane,
    Overloaded,
)

__all__ = [
    "BUSY_RETRY_AFTER_S",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ERRORS",
    "ERROR_STATUS",
    "MAX_BODY_BYTES",
    "RECALL_MAX_WAIT_S",
    "RECALL_PROCESSES",
    "RECALL_SLOTS",
    "WRITE_MAX_WAIT_S",
    "WRITE_SLOTS",
    "BodyLimit",
    "Caller",
    "Lane",
    "Overloaded",
    "app_from_env",
    "asgi",
    "bearer_secret",
    "create_app",
    "error_body",
    "error_status",
    "principal",
    "start_background_jobs",
]
