from django.urls import path

from apps.accounts import views

app_name = "accounts"

urlpatterns = [
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("team/", views.team_switch, name="team-switch"),
    path("preferences/", views.preferences, name="preferences"),
    path("password/", views.password_change, name="password-change"),
]
