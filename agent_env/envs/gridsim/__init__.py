"""The GridSim desk: a day-ahead battery trading desk, its simulator, scenarios and the desk-v4 bench bundle."""
