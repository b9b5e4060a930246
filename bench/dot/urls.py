"""The token endpoint and the authorisation view (``/o/``), and inspect's counterpart: a protected resource."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from oauth2_provider.views import ProtectedResourceView


class InspectView(ProtectedResourceView):
    """The toolkit's protected resource view, as its documentation writes one, answering JSON.

    The view validates the bearer token (one lookup) and hands on only its user
    (``request.resource_owner``): the body holds less than our inspect's claims.
    """

    def get(self, request: HttpRequest) -> JsonResponse:
        user = request.resource_owner  # type: ignore[attr-defined]
        return JsonResponse({"sub": str(user.pk), "name": user.get_username()}, headers={"Cache-Control": "no-store"})


urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("api/inspect", InspectView.as_view()),
]
