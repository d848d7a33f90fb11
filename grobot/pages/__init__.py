"""The pages of the web app: one module per page, each with its own substate."""
