"""What the search (textbox/hyper/) and the seed study (textbox/seeds.py) share: the study directory and its
log, the tool options, running many pipeline runs (a local process pool or Ray), and the tables and plots.

It knows runs, not searches or seeds: it never imports textbox.hyper or textbox.seeds.
"""
