"""Pydantic v2 models whose model_json_schema() output is kept beside this file
(one NAME.json per model), for the schema corpus test. Regenerate with
`python3 models.py` (Pydantic 2.x); the test itself needs no Python.
"""
import datetime
import decimal
import enum
import ipaddress
import json
import pathlib
import uuid
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, Field, HttpUrl, WithJsonSchema

# pydantic.EmailStr needs the email-validator package, which this machine
# cannot install; a str with the very schema EmailStr writes stands in.
EmailStr = Annotated[str, WithJsonSchema({"format": "email", "type": "string"})]


class Address(BaseModel):
    street: str = Field(max_length=80)
    city: str
    postal_code: str = Field(pattern=r"^[0-9]{5}$")
    country: str = Field(min_length=2, max_length=2)


class Customer(BaseModel):
    name: str
    email: EmailStr
    address: Optional[Address] = None


class LineItem(BaseModel):
    description: str = Field(max_length=60)
    quantity: int = Field(ge=1, le=1000)
    unit_price: float = Field(gt=0)
    tax_rate: float = Field(ge=0, le=1)


class Invoice(BaseModel):
    """An invoice to record."""
    invoice_id: uuid.UUID
    issued_at: datetime.datetime
    due_date: datetime.date
    status: Literal["draft", "sent", "paid"]
    customer: Customer
    items: list[LineItem] = Field(min_length=1, max_length=3)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    notes: Optional[str] = None


class FileNode(BaseModel):
    """A directory tree."""
    name: str = Field(max_length=40)
    size: int = Field(ge=0)
    children: list["FileNode"] = []


class Cat(BaseModel):
    pet_type: Literal["cat"]
    meows: int = Field(ge=0)


class Dog(BaseModel):
    pet_type: Literal["dog"]
    barks: float
    good_boy: bool = True


class Lizard(BaseModel):
    pet_type: Literal["reptile", "lizard"]
    scales: bool


class Owner(BaseModel):
    """A pet owner and the pet, a discriminated union."""
    name: str
    pet: Union[Cat, Dog, Lizard] = Field(discriminator="pet_type")


class Route(BaseModel):
    """A route of (latitude, longitude) points."""
    waypoints: list[tuple[float, float]] = Field(max_length=4)
    bbox: tuple[float, float, float, float]
    elevation: Optional[tuple[int, int]] = None


class Room(str, enum.Enum):
    alpha = "alpha"
    beta = "beta"


class Meeting(BaseModel):
    """A meeting: time, duration, date, e-mail, an enum and a set of literals."""
    day: datetime.date
    start: datetime.time
    length: datetime.timedelta
    organizer: EmailStr
    room: Room = Room.alpha
    days_off: set[Literal["sat", "sun", "mon"]] = set()


class Device(BaseModel):
    """A network device."""
    ip: ipaddress.IPv4Address
    gateway6: Optional[ipaddress.IPv6Address] = None
    mac: str = Field(pattern=r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
    port: int = Field(ge=1, le=65535)
    tags: dict[str, str] = {}
    vlan: Optional[Annotated[int, Field(ge=1, le=4094)]] = None
    homepage: Optional[HttpUrl] = None


class Payment(BaseModel):
    """A payment, with a Decimal amount."""
    amount: decimal.Decimal
    reference: uuid.UUID
    paid_at: datetime.datetime
    metadata: dict[str, Union[str, int, bool]] = Field(default={}, max_length=3)


class Comment(BaseModel):
    """A comment thread, recursive through an Optional."""
    author: str = Field(max_length=20)
    text: str
    reply: Optional["Comment"] = None


class Status(str, enum.Enum):
    pending = "pending"
    shipped = "shipped"


class OrderLine(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{2}-[0-9]{3}$")
    count: int = Field(gt=0, multiple_of=2)


class Order(BaseModel):
    """An order: nested models, an enum definition, priced lines."""
    status: Status
    shipping: Address
    lines: list[OrderLine] = Field(min_length=1, max_length=2)
    gift: bool = False


class Limits(BaseModel):
    """Settings: a dict over Literal keys, a non-empty dict."""
    levels: dict[Literal["low", "medium", "high"], Annotated[int, Field(ge=0, le=10)]]
    labels: dict[str, str] = Field(min_length=1)
    ratio: float = Field(gt=0, lt=1)


MODELS = [Invoice, FileNode, Owner, Route, Meeting, Device, Payment, Comment, Order, Limits]

if __name__ == "__main__":
    here = pathlib.Path(__file__).parent
    for model in MODELS:
        text = json.dumps(model.model_json_schema(), indent=2) + "\n"
        (here / f"{model.__name__.lower()}.json").write_text(text)
