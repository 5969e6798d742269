"""The allow-listed values stored in the golden files (module-level classes, allowed for the serde below)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from graphcore.checkpoints import serde


class Order(BaseModel):
    class Status(Enum):
        OPEN = "open"
        SHIPPED = "shipped"

    id: int
    status: Status


@dataclass(frozen=True)
class Point:
    x: int
    y: int


serde.allow_classes(Order, Point)  # no workflow's schema names them; Order.Status comes with Order

VALUES = {
    "when": datetime(2026, 3, 29, 2, 30, tzinfo=ZoneInfo("Europe/Paris")),
    "naive": datetime(2026, 1, 2, 3, 4, 5, 6),
    "offset": datetime(2026, 1, 2, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    "day": date(2026, 11, 30),
    "clock": time(23, 59, 58, 1),
    "span": timedelta(days=2, microseconds=7),
    "money": Decimal("1.10"),
    "uid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "order": Order(id=7, status=Order.Status.SHIPPED),
    "point": Point(1, 2),
    "raw": b"\x00\xff",
    "tags": {"a", "b"},
    "frozen": frozenset({1}),
    "pair": (1, "two"),
    "big": 2**100,
}
