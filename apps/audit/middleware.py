"""Give every request an id (taken from X-Request-ID when it is sane), echoed in the response."""

import re

from apps.audit.context import reset_request_id, set_request_id

_SANE_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        token = set_request_id(incoming if _SANE_ID.match(incoming) else None)
        try:
            from apps.audit.context import current_request_id

            request.request_id = current_request_id()
            response = self.get_response(request)
            response["X-Request-ID"] = request.request_id
            return response
        finally:
            reset_request_id(token)
