"""What training costs: estimates, measured rates, calibration, throughput, and plans in GPU-hours."""
