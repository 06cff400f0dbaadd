"""The user API's one exception handler: a refused service reads like a refused input, a state conflict is a 409."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from apps.common.errors import Conflict, DetailedValidationError


def answer_to(error: Exception):
    """The response of a user-API view whose service raised `error`."""

    class RefusingView(APIView):
        permission_classes = [AllowAny]

        def post(self, request):
            raise error

        def get(self, request):
            return Response({})

    return RefusingView.as_view()(APIRequestFactory().post("/", {}, format="json"))


def test_field_errors_keep_their_field_and_the_model_wide_ones_are_non_field_errors():
    response = answer_to(ValidationError({
        "amount": ["Give an amount.", "Amounts are sent as strings."],
        "__all__": ValidationError("Each owning figure needs its source.", code="source"),
    }))
    assert response.status_code == 400
    assert response.data == {
        "amount": ["Give an amount.", "Amounts are sent as strings."],
        "non_field_errors": ["Each owning figure needs its source."],
    }
    assert response.data["non_field_errors"][0].code == "source"


def test_a_message_without_a_field_is_a_non_field_error_with_its_parameters_filled_in():
    response = answer_to(ValidationError("Version %(version)s is already ready.", params={"version": 3}))
    assert response.status_code == 400
    assert response.data == {"non_field_errors": ["Version 3 is already ready."]}


def test_a_conflict_is_409_with_its_sentence_as_detail():
    response = answer_to(Conflict("Someone signed this stage a moment ago."))
    assert response.status_code == 409
    assert response.data == {"detail": "Someone signed this stage a moment ago."}
    assert response.data["detail"].code == "conflict"


def test_a_detailed_refusal_adds_its_details_beside_the_messages():
    response = answer_to(DetailedValidationError(
        {"quote": "Below the commitment policy."},
        details={"missing_answers": [{"question": "commercial-model", "reason": "unanswered"}], "problems": []},
    ))
    assert response.status_code == 400
    assert response.data == {
        "quote": ["Below the commitment policy."],
        "missing_answers": [{"question": "commercial-model", "reason": "unanswered"}],
        "problems": [],
    }


def test_a_refused_permission_keeps_its_reason():
    response = answer_to(PermissionDenied("The author of a record never signs it."))
    assert response.status_code == 403
    assert response.data == {"detail": "The author of a record never signs it."}


def test_any_other_error_is_still_a_server_error():
    with pytest.raises(ZeroDivisionError):
        answer_to(ZeroDivisionError())
