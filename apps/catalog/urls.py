from django.urls import path

from apps.common import views

app_name = "catalog"
urlpatterns = [path("", views.home, name="list")]
