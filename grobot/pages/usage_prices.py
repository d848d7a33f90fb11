"""The Usage page's prices card (admins): the price per million input and output tokens of each model
(the admin's and the defaults; local models are free) and the currency of the estimated costs."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import reflex as rx

from grobot.components.forms import error_text
from grobot.components.layout import NARROW_ONLY, WIDE_CELL
from grobot.core.errors import GroBotError
from grobot.core.services import costs
from grobot.core.services.validation import capitalised, sentences
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

MAX_SHOWN = 200
PRICE_FIELDS = ("provider", "model", "input", "output")


@dataclass
class PriceLine:
    """One model's price, as text ready to show."""

    provider: str
    model: str
    input: str
    output: str
    source: str
    admin: bool


def load_prices(session, _user) -> tuple[list[PriceLine], str]:
    prices = costs.list_prices(session=session)[:MAX_SHOWN]
    lines = [PriceLine(provider=p.provider, model=p.model, input=f"{p.input_per_million:g}",
                       output=f"{p.output_per_million:g}", source="set here" if p.source == "admin" else "default",
                       admin=p.source == "admin") for p in prices]
    return lines, costs.get_currency(session=session)


class PricesState(AdminState):
    """The prices and the currency."""

    prices: list[PriceLine] = []
    currency: str = costs.DEFAULT_CURRENCY
    form_key: int = 0  # bumped after a price is saved: the form starts empty again
    price_errors: dict[str, str] = {}  # by PRICE_FIELDS

    async def _reload(self) -> None:
        self.prices, self.currency = await self._admin(load_prices)

    @rx.event
    async def open(self):
        return await self._open()

    @rx.event
    async def save_price(self, form: dict[str, str]):
        """Set the price of the model typed in the form. A problem shows next to its field and what was
        typed stays; the form starts empty again only once the price is saved."""
        typed = {name: str(form.get(name, "")) for name in PRICE_FIELDS}
        problems = costs.price_problems(typed["provider"], typed["model"], typed["input"], typed["output"])
        self.price_errors = {name: capitalised(problem).rstrip(".") + "." for name, problem in problems.items()}
        if problems:
            return None
        try:
            price = await self._admin(lambda session, _user: costs.set_price(
                typed["provider"], typed["model"], typed["input"], typed["output"], session=session), readonly=False)
            await self._reload()
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(sentences(str(exc)))
        self.form_key += 1
        return rx.toast.success(f"Price of {price.provider}/{price.model} saved")

    @rx.event
    async def delete_price(self, provider: str, model: str):
        """Remove the admin's price of a model (its default, if any, applies again)."""
        return await self._act(lambda session, _user: costs.delete_price(provider, model, session=session),
                               f"Price of {provider}/{model} removed")

    @rx.event
    async def save_currency(self, form: dict[str, str]):
        from grobot.pages.usage_state import UsageState  # the page that holds this card (it imports this module)

        code = form.get("currency", "")
        before = self.currency
        result = await self._act(lambda session, _user: costs.set_currency(code, session=session),
                                 lambda saved: f"Costs are shown in {saved}")
        return [result, UsageState.open] if self.currency != before else result


def source_badge(line: PriceLine) -> rx.Component:
    """Whose price it is: "set here" (the admin's) or "default"."""
    return rx.badge(line.source, color_scheme=rx.cond(line.admin, "accent", "gray"), variant="soft")


def price_row(line: PriceLine) -> rx.Component:
    """One model's price; a narrow screen shows its provider and source under the model, in place of
    their columns, so the row (and its Remove button) fits the screen."""
    return rx.table.row(
        rx.table.cell(line.provider, display=WIDE_CELL),
        rx.table.row_header_cell(rx.vstack(
            rx.text(line.model, weight="medium", word_break="break-word"),
            rx.hstack(rx.text(line.provider, size="1", color=rx.color("gray", 11)), source_badge(line),
                      spacing="2", align="center", wrap="wrap", display=NARROW_ONLY, data_testid="price-details"),
            spacing="1",
        )),
        rx.table.cell(line.input, text_align="right"),
        rx.table.cell(line.output, text_align="right"),
        rx.table.cell(source_badge(line), display=WIDE_CELL),
        rx.table.cell(rx.cond(
            line.admin,
            rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", size="1",
                           aria_label="Remove the price of " + line.provider + " " + line.model,
                           on_click=PricesState.delete_price(line.provider, line.model)),
        )),
        data_price_model=line.model,
    )


def price_input(name: str, placeholder: str, label: str, width: str, **props: str) -> rx.Component:
    """One field of the price form, with its problem under it."""
    return rx.vstack(
        rx.input(name=name, placeholder=placeholder, aria_label=label, width="100%", required=True,
                 aria_invalid=rx.cond(PricesState.price_errors.contains(name), "true", "false"), **props),
        rx.cond(PricesState.price_errors.contains(name),  # type: ignore[attr-defined]
                error_text(PricesState.price_errors[name], data_field_error=f"price-{name}")),
        spacing="1",
        width=width,
        max_width="100%",
    )


def price_form() -> rx.Component:
    return rx.form(
        rx.flex(
            price_input("provider", "provider (e.g. openai)", "Provider", "11rem"),
            price_input("model", "model", "Model", "14rem"),
            price_input("input", "input", "Input price per million tokens", "7rem", input_mode="decimal"),
            price_input("output", "output", "Output price per million tokens", "7rem", input_mode="decimal"),
            rx.button("Save price", type="submit"),
            gap="0.5rem",
            wrap="wrap",
            align="start",
        ),
        key=PricesState.form_key,
        on_submit=PricesState.save_price,
        reset_on_submit=False,
    )


def currency_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.text("Currency", size="2", color=rx.color("gray", 11)),
            rx.input(name="currency", default_value=PricesState.currency, key=PricesState.currency,
                     aria_label="Currency", width="5rem", max_length=3),
            rx.button("Save currency", type="submit", variant="soft"),
            align="center",
            spacing="2",
        ),
        on_submit=PricesState.save_currency,
    )


def prices_card() -> rx.Component:
    right = {"text_align": "right"}
    return rx.card(
        rx.vstack(
            rx.heading("Prices", size="4", as_="h2"),
            rx.text("Per million tokens, in " + PricesState.currency + ". Estimated costs use them; local models "
                    "(Ollama, llama.cpp) are free, and a model without a price has no cost. The defaults are "
                    "approximate list prices: set your own for your contract or currency.",
                    size="2", color=rx.color("gray", 11)),
            currency_form(),
            price_form(),
            rx.box(
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell("Provider", display=WIDE_CELL),
                        rx.table.column_header_cell("Model"),
                        rx.table.column_header_cell("Input", **right),
                        rx.table.column_header_cell("Output", **right),
                        rx.table.column_header_cell("Source", display=WIDE_CELL),
                        rx.table.column_header_cell(""),
                    )),
                    rx.table.body(rx.foreach(PricesState.prices, price_row)),
                    variant="surface",
                    size="1",
                    width="100%",
                    data_testid="prices",
                ),
                overflow_x="auto",
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )
