"""What model calls cost: prices in force at each call's time (pydantic's ``genai-prices``,
and a user's price file over it), and the ``call_costs`` projection the reports read."""

# the price file serve's refresher (and a command's --prices, by default) reads
PRICES_ENV = "AGENTDOCKET_PRICES"
