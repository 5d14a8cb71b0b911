/* The draws of one fate, as CPython's random.Random(n) makes them, without seeding a whole generator.
 *
 * A fate (docs/simulator.md#event-keys-and-fates) is Random(n) for a 64-bit n, then u = random() and,
 * when u < p, the draws of the retry index and the detail (rejection sampling on getrandbits) and
 * the random() that picks the type. Seeding is most of that cost in CPython: init_genrand(19650218)
 * (the same 624 words for every n), init_by_array over n's 32-bit words, then a full 624-word twist
 * before the first output. Here the constant part is computed once (_mersenne.h, whose init_by_array
 * takes no per-step branches), and only the outputs a fate reads are twisted: output i needs words i,
 * i + 1 and i + 397, none of them rewritten by the twist while i < 227. Every number equals CPython's: pairing/dice.py checks that on import (and draws with
 * random.Random when it does not hold), and tests/test_pairing.py compares the two on 102,006 seeds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_mersenne.h"

#define LAZY_OUTPUTS (N - M) /* outputs 0..226 read only words the first twist has not rewritten */

/* Output i (i < LAZY_OUTPUTS) of the freshly seeded generator: genrand_uint32's twist and tempering. */
static inline uint32_t output(const uint32_t *mt, int i) {
    uint32_t y = (mt[i] & 0x80000000U) | (mt[i + 1] & 0x7fffffffU);
    y = mt[i + M] ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

/* random(): 53 bits from outputs i and i + 1. */
static inline double random_at(const uint32_t *mt, int i) {
    uint32_t a = output(mt, i) >> 5, b = output(mt, i + 1) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

static PyObject *fault_draws(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "fault_draws(n, p) takes a seed and a fault probability");
        return NULL;
    }
    unsigned long long n = PyLong_AsUnsignedLongLong(args[0]);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    double p = PyFloat_AsDouble(args[1]);
    if (p == -1.0 && PyErr_Occurred()) return NULL;
    /* CPython keys Random(n) by n's 32-bit words, least significant first, as many as n needs (>= 1). */
    uint32_t key[2] = {(uint32_t)n, (uint32_t)(n >> 32)};
    uint32_t mt[N];
    seeded_state(mt, key, key[1] ? 2 : 1);
    if (random_at(mt, 0) >= p) Py_RETURN_NONE;
    int i = 2;
    uint32_t retry_index, dropped;
    do { /* choice of four: _randbelow(4) is getrandbits(3) until < 4 */
        if (i >= LAZY_OUTPUTS) Py_RETURN_NOTIMPLEMENTED;
        retry_index = output(mt, i++) >> 29;
    } while (retry_index >= 4);
    do { /* randrange(0, 1000000): getrandbits(20) until < 1000000 */
        if (i >= LAZY_OUTPUTS) Py_RETURN_NOTIMPLEMENTED;
        dropped = output(mt, i++) >> 12;
    } while (dropped >= 1000000);
    if (i + 1 >= LAZY_OUTPUTS) Py_RETURN_NOTIMPLEMENTED;
    return Py_BuildValue("(IId)", retry_index, dropped, random_at(mt, i));
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
