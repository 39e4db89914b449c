"""What a request body must be before any route parses it ("HTTP hygiene").

JSON only (so no cross-site "simple" POST, which a browser sends as text/plain or a form,
reaches a route), at most 16 KiB (refused before the body is read in full), and nested no
deeper than a handful of levels (a deep nesting would exhaust the parser's recursion).
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE

MAX_BODY_BYTES = 16 * 1024
MAX_JSON_DEPTH = 16  # our deepest schema nests two levels; this leaves room for growth
JSON_MEDIA_TYPE = "application/json"
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def require_json_body(request: Request[Any, Any, Any]) -> None:
    """Refuse a body that is not JSON (415), too large (413) or nested too deep (400).

    A Litestar ``before_request`` hook: the body it reads is the one the route then parses.
    """
    if request.method not in _WITH_BODY:
        return
    declared = "content-type" in request.headers
    media_type = request.content_type[0].lower() if declared else ""
    carries_body = bool(request.content_length) or "transfer-encoding" in request.headers
    if (declared or carries_body) and media_type != JSON_MEDIA_TYPE:
        raise HTTPException(
            status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            detail=f"the body must be {JSON_MEDIA_TYPE}",
        )
    body = await request.body()  # 413 past the app's request_max_body_size
    if nesting_exceeds(body, MAX_JSON_DEPTH):
        raise ValidationException(detail=f"the JSON body nests deeper than {MAX_JSON_DEPTH}")


def nesting_exceeds(body: bytes, limit: int) -> bool:
    """Whether the JSON text ``body`` opens more than ``limit`` arrays or objects at once.

    Brackets inside strings do not count. Bodies with few brackets skip the scan.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif byte in _CLOSE:
            depth -= 1
    return False
