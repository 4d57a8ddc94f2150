"""The API's errors, with Toxiproxy's messages and status codes.

An error answers as `{"error": "<message>", "status": <code>}` with that HTTP status, exactly the
shape a real Toxiproxy sends, so clients that branch on status (toxiproxy-python raises ProxyExists
on 409, NotFound on 404, InvalidToxic on 400) behave the same against ours.
"""
from __future__ import annotations

import json


class ApiError(Exception):
    """An error the API answers with; `status` is the HTTP status code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status

    def joined(self, detail: str) -> ApiError:
        """This error with a detail appended, as Toxiproxy writes "missing required field: name"."""
        return ApiError(f"{self.message}: {detail}", self.status)

    def to_json(self) -> dict[str, object]:
        return {"error": self.message, "status": self.status}

    def body(self) -> bytes:
        return (json.dumps(self.to_json()) + "\n").encode()


BAD_REQUEST_BODY = ApiError("bad request body", 400)
MISSING_FIELD = ApiError("missing required field", 400)
PROXY_NOT_FOUND = ApiError("proxy not found", 404)
PROXY_EXISTS = ApiError("proxy already exists", 409)
INVALID_STREAM = ApiError("stream was invalid, can be either upstream or downstream", 400)
INVALID_TOXIC_TYPE = ApiError("invalid toxic type", 400)
TOXIC_EXISTS = ApiError("toxic already exists", 409)
TOXIC_NOT_FOUND = ApiError("toxic not found", 404)


def listen_error(message: str) -> ApiError:
    """A listener that cannot bind: Toxiproxy passes the OS error through as a 500."""
    return ApiError(message, 500)
