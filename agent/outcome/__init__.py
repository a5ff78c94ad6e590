"""Step 7, outcome: CR statuses, the commit report and the ownership inventory, from what apply
did."""
