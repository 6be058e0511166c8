//! Measurement over frame logs and tool lists: `report`, `audit`, `gap`.
