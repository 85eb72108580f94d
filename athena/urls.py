from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from athena.apis import HealthApi
from athena.auth import ThrottledAuthenticationForm
from athena.views import RedocPage, favicon

api_v1 = [
    path("health", HealthApi.as_view(), name="health"),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("redoc", RedocPage.as_view(url_name="schema"), name="api-redoc"),
]


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(form_class=ThrottledAuthenticationForm), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include(api_v1)),
    path("api/v1/", include("knowledge.urls")),
    path("", include("agents.urls")),
    path("", include("audit.urls")),
]
