"""The questions a full poll of the AdminSource asks, each a small unit behind one interface.

In: the poll's `Poll` (what the metadata said: brokers, controller, partitions, topics; for the
later probes also what the earlier found: the brokers' own log ends, the KRaft decisions, the
mode). Out: each probe's typed answer, which sources/admin.py puts into the BrokerView. The
AdminSource keeps the threads, the scheduling and the order; a probe only asks.

A probe (`Probe`, base.py) says whether this poll asks it (`asks`), asks (`ask`, on one of the
poll's threads, bounded by a time limit, never raising for a broker that does not answer) and
what the view holds when it was not asked (`unasked`: its last answer, or Unknown with the
reason; `EveryPoll` for a probe every poll asks). It asks on connections of its own (`Links`)
when it runs beside others, since a connection asks one question at a time (the reassignments
and the eligible leaders share the full polls' links with the brokers' own answers, as before:
a question on a busy link waits its turn).

Adding a probe:
1. Write it in a module here (or beside its kin): a class with `asks`, `ask` and `unasked`
   (or `ask` on `EveryPoll`), its answer a frozen value or a model type, its connections and
   state its own.
2. Add it to `Probes` and make it in `Probes.made` (sources/admin.py), and start it in
   `AdminSource._ask_all` with `start` (beside the others, on the poll's pool) or `ask_now`
   (on the poll's thread, once what it needs was answered): the answers are waited for in the
   order they are written there.
3. Add its field to `PollAnswers` and to the BrokerView (`model/views.py`), and test it
   without a cluster with a stand-in for the client call it makes.
"""
