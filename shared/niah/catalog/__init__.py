"""What the service knows of models: plain data every layer may read (no upward import).

``niah.catalog.models`` holds the catalog (limits, thinking, temperature, lifecycle,
sources); ``niah.catalog.prices`` the prices, from ``genai-prices``, imported only where a
call is priced so the dispatcher's cold start does not load the library.
"""
