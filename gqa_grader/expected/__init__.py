"""What a step's answer is expected to be: the cases' inputs, the reference, and how
answers are compared.  Imports the language and running (failures, values) alone.

    compare    comparing answers: values, record fields, the lab's types; one tolerance
    inputs     the cases' inputs, drawn and shaped; the counter the reference counts with
    reference  the reference: one ref_ function per step, built another way
    mistaken   the classic mistakes' wrong functions (mis_), built on the reference
    answers    where the checks' expected answers come from: the reference, or the
               answers a handout recorded
    mistakes   the classic mistakes by name: a failing answer recognised as one

Each imports only those above it and the rooms below this one.
"""
