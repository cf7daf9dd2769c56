"""What the search (textbox/studies/search/) and the seed study (textbox/studies/seeds.py) share: the study
directory and its log, the tool options, running many pipeline runs (a local process pool or Ray), and the tables
and plots.

It knows runs, not searches or seeds: it never imports textbox.studies.search or textbox.studies.seeds.
"""
