"""What every process of the product shares: workers keyed by object uid and the health port."""
