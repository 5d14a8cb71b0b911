/* The draws of one fate, as CPython's random.Random(n) makes them, without seeding a whole generator.
 *
 * A fate (docs/simulator.md#event-keys-and-fates) is Random(n) for a 64-bit n, then u = random() and,
 * when u < p, the draws of the retry index and the detail (rejection sampling on getrandbits) and
 * the random() that picks the type. Seeding is most of that cost in CPython: init_genrand(19650218)
 * (the same 624 words for every n), init_by_array over n's 32-bit words, then a full 624-word twist
 * before the first output. Here the constant part is computed once (_mersenne.h, whose init_by_array
 * takes no per-step branches), and only the outputs a fate reads are twisted (_fate_core.h, shared with
 * the compiled lean episode). Every number equals CPython's: pairing/dice.py checks that on import (and draws with
 * random.Random when it does not hold), and tests/test_pairing.py compares the two on 102,006 seeds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fate_core.h"

static PyObject *fault_draws(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "fault_draws(n, p) takes a seed and a fault probability");
        return NULL;
    }
    unsigned long long n = PyLong_AsUnsignedLongLong(args[0]);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    double p = PyFloat_AsDouble(args[1]);
    if (p == -1.0 && PyErr_Occurred()) return NULL;
    uint32_t retry_index, dropped;
    double type_draw;
    int drawn = fate_draws(n, p, &retry_index, &dropped, &type_draw);
    if (drawn == 0) Py_RETURN_NONE;
    if (drawn < 0) Py_RETURN_NOTIMPLEMENTED;
    return Py_BuildValue("(IId)", retry_index, dropped, type_draw);
}

static PyMethodDef methods[] = {
    {"fault_draws", (PyCFunction)(void (*)(void))fault_draws, METH_FASTCALL,
     "fault_draws(n, p) -> None when Random(n).random() >= p, else (retry index, dropped, type draw)\n"
     "as random.Random(n) draws them after u; NotImplemented when the rejection loops would need more\n"
     "outputs than the lazy twist gives (probability below 2**-200): then draw with random.Random."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fate_draws", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fate_draws(void) {
    init_constant_part();
    return PyModule_Create(&module);
}
