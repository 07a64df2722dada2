"""Search on any branch (issue 26): ``find``'s exact filters, counted and paged in key order
(``find``); text and vector ranking are the issue's next parts."""
