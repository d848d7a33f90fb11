"""The documents and questions of ``bench/documents.py``: a fictional coffee company's FAQ, returns
policy, espresso machine manual, privacy policy and staff handbook (Markdown and PDF), and
questions whose answer is one fact of one of them.

Every third question is held out (:data:`HELD_OUT`): the chunking and the threshold were tuned
on the others only.
"""

from __future__ import annotations

from dataclasses import dataclass

FAQ = """# Brightwave Coffee: frequently asked questions

## Subscriptions

### How does the coffee subscription work?
You choose a roast and a rhythm: every week, every two weeks or every month. We roast your beans
on Monday and ship them the same day, so they reach you within three days of roasting.

### Can I pause or skip a delivery?
Yes. In your account, open Subscriptions and choose Pause. A subscription can be paused for up to
three months at a time; after that it starts again on its own. Skipping a single delivery is
possible until Sunday at 18:00 before the roast day.

### How do I cancel my subscription?
Cancel at any time under Account > Subscriptions > Cancel. There is no cancellation fee. A box that
was already roasted is still delivered and charged.

## Delivery

### Which countries do you ship to?
We ship to all countries of the European Union, to Switzerland, Norway and the United Kingdom.
We do not ship outside Europe yet.

### How much does shipping cost?
Shipping is free for orders over 35 euros. Below that, shipping within Germany costs 3.90 euros
and to the rest of Europe 6.50 euros.

### Can I track my parcel?
Every parcel gets a tracking number by e-mail as soon as it leaves the roastery. Parcels travel with
DHL in Germany and with GLS to other countries.

## Payment and gift cards

### Which payment methods do you accept?
We accept credit cards (Visa, Mastercard, American Express), PayPal, SEPA direct debit and
Apple Pay. Invoices are only available for business customers.

### Do gift cards expire?
Gift cards are valid for three years from the end of the year they were bought in. They can be
used for the shop and for subscriptions, and the remaining balance stays on the card.

## Coffee and brewing

### How should I store my coffee beans?
Keep the beans in the resealable bag or an airtight tin, away from light and heat. Do not put
coffee in the fridge: the moisture spoils its aroma. Beans taste best within six weeks of roasting.

### Do you offer decaf?
Yes, our Night Owl decaf is decaffeinated with the Swiss Water process, without chemicals. It
contains less than 0.1 percent caffeine.
"""

RETURNS = """# Returns and Refunds Policy

This policy applies to every order placed in the Brightwave Coffee online shop. It was last
updated on 1 March 2026.

## Right of withdrawal

You may withdraw from a purchase within 14 days of receiving the goods, without giving a reason.
To withdraw, send us a clear statement by e-mail to returns@brightwave.example or use the form in
your account.

## Which items can be returned

Equipment such as grinders, kettles and espresso machines can be returned if it is unused and in
its original packaging. Opened coffee cannot be returned for hygiene reasons, unless it is
faulty. Personalised gift boxes are excluded from returns.

## How to send an item back

Print the prepaid return label from your account and attach it to the parcel. Returns within
Germany are free of charge; from other countries the return shipping costs 7.95 euros, which we
deduct from the refund. Please pack equipment so that it cannot be damaged in transit.

## Refunds

We refund the purchase price within 10 working days of receiving the returned item. The money
goes back with the payment method you used for the order. Original shipping costs are refunded
only when the whole order is returned.

## Damaged or faulty goods

If an item arrives damaged, send us a photo within 7 days of delivery. We then send a
replacement at no cost, or refund the item if no replacement is available. Faulty equipment is
covered by the statutory warranty of two years.

## Exchanges

We do not exchange items directly. Return the item for a refund and place a new order for the
item you want instead.
"""

MANUAL = """# Barista Pro 3 espresso machine: user manual

## Safety instructions

Read this manual before the first use. Connect the machine only to a grounded socket with a voltage
of 220 to 240 volts. Never immerse the machine, the cable or the plug in water. Keep children away
from the hot steam wand. Unplug the machine before you clean it.

## Before the first use

Rinse the water tank and fill it with fresh, cold water up to the MAX mark; the tank holds 2.1
litres. Switch the machine on with the main switch on the back. The power light flashes while the
boiler heats up, which takes about 45 seconds. Run two empty cycles through the group head to
flush the system before you make the first coffee.

## Making an espresso

Grind 18 grams of coffee for a double shot and tamp it evenly with a pressure of about 15
kilograms. Lock the portafilter into the group head and press the two-cup button. A good shot
runs for 25 to 30 seconds and gives about 36 grams of espresso. If the shot runs faster, grind
finer; if it runs slower, grind coarser.

## Frothing milk

Fill the milk jug with cold milk up to the bottom of its spout. Turn the steam dial to the left and
wait until the steam light is steady. Hold the tip of the steam wand just below the surface of the
milk until it reaches about 60 degrees Celsius. Wipe the steam wand with a damp cloth right after
each use and purge it for two seconds.

## Cleaning and descaling

Empty the drip tray and the coffee grounds container every day. Backflush the group head with the
blind filter once a week. Descale the machine every three months, or when the descaling light
turns orange. Use only the Brightwave descaling liquid: mix 100 millilitres with one litre of
water and start the descaling program by holding the steam and the two-cup buttons for five
seconds. The program takes about 25 minutes.

## Troubleshooting

If no water comes out, check that the water tank is seated correctly and not empty. If the
espresso is cold, preheat the cups and let the machine heat up for at least 15 minutes. If the
red error light blinks three times, the boiler has overheated: switch the machine off and let it
cool down for 30 minutes. If the pump is very loud, the water tank is empty.

## Technical data and warranty

Power: 1450 watts. Pump pressure: 15 bar. Weight: 9.5 kilograms. The warranty for the Barista Pro 3
is 3 years from the date of purchase if the machine is registered online within 30 days;
otherwise the statutory warranty of two years applies. Keep the receipt as proof of purchase.
"""

PRIVACY = """# Privacy policy

Brightwave Coffee GmbH, Hafenstrasse 12, 20457 Hamburg, is responsible for the processing of your
personal data on this website and in our shop.

## What data we collect

When you order, we store your name, delivery address, e-mail address and order history. We do not
store full credit card numbers: payments are processed by our payment provider Stripe.

## Cookies

We use necessary cookies to keep your basket and your login. Analytics cookies are only set after
you agree in the cookie banner, and you can withdraw your consent at any time under Cookie
settings at the bottom of every page.

## Newsletter

We send the newsletter only with your explicit consent, confirmed by a double opt-in e-mail. Every
newsletter contains an unsubscribe link, and we delete your e-mail address from the mailing list
within 48 hours of unsubscribing.

## How long we keep your data

Order data is kept for ten years because tax law requires it. Customer accounts that have not been
used for three years are deleted after a reminder e-mail. Support e-mails are deleted after two
years.

## Your rights

You have the right to access, correct and delete your data, to restrict its processing and to
receive it in a portable format. Send your request to privacy@brightwave.example; we answer
within one month.

## Data protection officer

Our data protection officer is Dr. Lena Hoffmann. You can reach her at dpo@brightwave.example or by
post at our Hamburg address.
"""

HANDBOOK = """# Brightwave staff handbook

## Working hours

The roastery works in two shifts: the early shift from 6:00 to 14:30 and the late shift from 14:00
to 22:30. Shift plans are published every Thursday for the following two weeks.

## Holidays

Full-time employees have 30 days of paid holiday per year. Holiday requests must be submitted in
the HR portal at least four weeks in advance. No holidays can be taken during the Christmas
season from 1 December to 23 December, when the roastery is busiest.

## Sick leave

If you are ill, call your shift lead before the start of your shift. From the fourth day of
illness a doctor's certificate is required.

## Coffee allowance

Every employee receives two bags of coffee of 500 grams each per month for free, and a 30 percent
discount on equipment in the shop.

## Safety in the roastery

Safety shoes and hearing protection must be worn in the roasting hall at all times. The roaster
may only be operated by staff who have completed the roaster training. In case of fire, leave the
building by the nearest exit and meet at the assembly point in the car park.

## Expenses

Travel expenses are reimbursed when submitted with receipts within 60 days. Train travel is
booked in second class; first class is only allowed for trips longer than four hours.
"""


@dataclass(frozen=True)
class Document:
    path: str
    text: str  # Markdown; a ``.pdf`` is rendered from it (headings larger, with an outline)


DOCUMENTS = [
    Document("faq.md", FAQ),
    Document("returns-policy.pdf", RETURNS),
    Document("barista-pro-3-manual.pdf", MANUAL),
    Document("privacy-policy.md", PRIVACY),
    Document("staff-handbook.pdf", HANDBOOK),
]


@dataclass(frozen=True)
class Question:
    text: str
    path: str  # the document that answers it
    facts: tuple[str, ...]  # the answer states one of these (lower case)


QUESTIONS = [
    Question("How often can I get coffee delivered with a subscription?", "faq.md", ("every week", "two weeks", "month")),
    Question("For how long can I pause my subscription?", "faq.md", ("three months", "3 months")),
    Question("Until when can I skip a delivery?", "faq.md", ("sunday", "18:00")),
    Question("Is there a fee if I cancel my subscription?", "faq.md", ("no cancellation fee",)),
    Question("Do you deliver to Switzerland?", "faq.md", ("switzerland",)),
    Question("What does shipping cost within Germany?", "faq.md", ("3.90", "3,90")),
    Question("Above which order value is shipping free?", "faq.md", ("35",)),
    Question("Which carrier delivers my parcel in Germany?", "faq.md", ("dhl",)),
    Question("Can I pay with PayPal?", "faq.md", ("paypal",)),
    Question("How long is a gift card valid?", "faq.md", ("three years", "3 years")),
    Question("Should I keep my coffee beans in the fridge?", "faq.md", ("do not put", "not in the fridge", "moisture")),
    Question("How is the decaf decaffeinated?", "faq.md", ("swiss water",)),
    Question("How many days do I have to withdraw from a purchase?", "returns-policy.pdf", ("14 days", "fourteen days")),
    Question("Can I return a bag of coffee I already opened?", "returns-policy.pdf", ("hygiene", "cannot be returned")),
    Question("How much does it cost to send a return from Austria?", "returns-policy.pdf", ("7.95", "7,95")),
    Question("How long does it take to get my money back after a return?", "returns-policy.pdf", ("10 working days", "ten working days")),
    Question("My grinder arrived broken, what should I do?", "returns-policy.pdf", ("photo", "7 days", "seven days")),
    Question("Can I exchange an item for another one?", "returns-policy.pdf", ("do not exchange", "new order")),
    Question("Are personalised gift boxes returnable?", "returns-policy.pdf", ("excluded",)),
    Question("How much water does the Barista Pro 3 tank hold?", "barista-pro-3-manual.pdf", ("2.1", "2,1")),
    Question("How long does the machine take to heat up?", "barista-pro-3-manual.pdf", ("45 seconds",)),
    Question("How much coffee do I need for a double shot?", "barista-pro-3-manual.pdf", ("18 grams", "18 g")),
    Question("How long should an espresso shot run?", "barista-pro-3-manual.pdf", ("25 to 30", "25-30")),
    Question("To what temperature should I froth the milk?", "barista-pro-3-manual.pdf", ("60 degrees", "60 °c", "60°c")),
    Question("How often do I need to descale the espresso machine?", "barista-pro-3-manual.pdf", ("three months", "3 months")),
    Question("The red light blinks three times, what does that mean?", "barista-pro-3-manual.pdf", ("overheated", "cool down")),
    Question("What is the pump pressure of the machine?", "barista-pro-3-manual.pdf", ("15 bar",)),
    Question("How long is the warranty on the Barista Pro 3 if I register it?", "barista-pro-3-manual.pdf", ("3 years", "three years")),
    Question("Do you store my credit card number?", "privacy-policy.md", ("do not store", "stripe")),
    Question("How can I withdraw my consent to analytics cookies?", "privacy-policy.md", ("cookie settings",)),
    Question("How quickly is my e-mail removed after I unsubscribe from the newsletter?", "privacy-policy.md", ("48 hours",)),
    Question("How long do you keep order data?", "privacy-policy.md", ("ten years", "10 years")),
    Question("Who is your data protection officer?", "privacy-policy.md", ("lena hoffmann",)),
    Question("When does the early shift start?", "staff-handbook.pdf", ("6:00", "06:00")),
    Question("How many holiday days do full-time employees get?", "staff-handbook.pdf", ("30 days",)),
    Question("From which day of illness do I need a doctor's note?", "staff-handbook.pdf", ("fourth day", "4th day")),
    Question("How much free coffee do employees get each month?", "staff-handbook.pdf", ("two bags", "500 grams")),
    Question("When may I travel first class?", "staff-handbook.pdf", ("four hours", "4 hours")),
    Question("What must I wear in the roasting hall?", "staff-handbook.pdf", ("safety shoes", "hearing protection")),
]

HELD_OUT = [q for index, q in enumerate(QUESTIONS) if index % 3 == 2]
DEV = [q for index, q in enumerate(QUESTIONS) if index % 3 != 2]

# Messages that need no document: no passage may reach the prompt, and they cost no added LLM call.
PLAIN = [
    "Hello!",
    "How are you today?",
    "Tell me a joke.",
    "Thanks, that's all for now.",
    "What's your name?",
    "Write a haiku about autumn.",
    "What is 12 times 12?",
    "Good morning, nice to meet you.",
]
