"""The Astra agent: the Responses API loop, transports, workspace tools, budget and events."""
