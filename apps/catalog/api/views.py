"""The catalog API: read-only for every user with a role; the catalog is changed in the admin and the browser."""

from rest_framework import viewsets

from apps.accounts.permissions import ReadAnyRoleWriteAdmin
from apps.catalog.api.serializers import GpuModelSerializer
from apps.catalog.filters import GpuModelFilterSet
from apps.catalog.selectors import gpu_catalog


class GpuModelViewSet(viewsets.ReadOnlyModelViewSet):
    """GPU models with every figure, its source and its as-of date."""

    queryset = gpu_catalog()
    serializer_class = GpuModelSerializer
    # Writes are not offered: a non-admin gets 403 before the method is even considered, an admin 405.
    permission_classes = [ReadAnyRoleWriteAdmin]
    filterset_class = GpuModelFilterSet
    ordering_fields = ["name", "variant", "form_factor"]
    ordering = ["vendor", "name", "variant"]
