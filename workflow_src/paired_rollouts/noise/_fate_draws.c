/* Mersenne Twister draws exactly as CPython's random.Random makes them: a fate's, without seeding a whole
 * generator, and a world's, from a whole generator without random.py's Python-level calls.
 *
 * A fate (docs/simulator.md#event-keys-and-fates) is Random(n) for a 64-bit n, then u = random() and,
 * when u < p, the draws of the retry index and the dropped field (rejection sampling on getrandbits) and
 * the random() that picks the type. Seeding is most of that cost in CPython: init_genrand(19650218)
 * (the same 624 words for every n), init_by_array over n's 32-bit words, then a full 624-word twist
 * before the first output. Here the constant part is computed once, and only the outputs a fate reads
 * are twisted: output i needs words i, i + 1 and i + 397, none of them rewritten by the twist while
 * i < 227. Every number equals CPython's: noise/schedule.py checks that on import (and draws with
 * random.Random when it does not hold), and tests/test_noise.py compares the two on 102,006 seeds.
 *
 * A world (docs/simulator.md#world-generation) draws about 1,300 numbers from one Random(seed) through
 * randint, choice and randrange, each two or three Python calls deep in random.py. MersenneDraws(seed)
 * is that generator (the same seeding, genrand_uint32 and twist as Modules/_randommodule.c) with those
 * methods in C: _randbelow(n) is getrandbits(n.bit_length()) until below n, getrandbits(k <= 32) the top
 * k bits of one output. backoffice/world.py uses it only where its import check finds every method equal
 * to random.Random's; tests/test_world.py compares whole worlds built both ways.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define N 624
#define M 397
#define LAZY_OUTPUTS (N - M) /* outputs 0..226 read only words the first twist has not rewritten */

static uint32_t genrand_19650218[N]; /* init_genrand(19650218): where every init_by_array starts */

static void init_constant_part(void) {
    genrand_19650218[0] = 19650218U;
    for (int i = 1; i < N; i++) {
        uint32_t prev = genrand_19650218[i - 1];
        genrand_19650218[i] = 1812433253U * (prev ^ (prev >> 30)) + (uint32_t)i;
    }
}

/* init_by_array(key, key_length) of CPython's Modules/_randommodule.c for key_length 1 or 2, from the
 * precomputed start. CPython's two loops walk i = 1..N-1, copy mt[N-1] to mt[0] and take one more step
 * at i = 1 (the first loop N steps, the second N-1); here each is written out that way, the previous
 * word kept in a register and the key word of step t (key[t % key_length] + t % key_length) taken from
 * a two-entry table, so no step branches. */
static void seeded_state(uint32_t *mt, const uint32_t *key, int key_length) {
    memcpy(mt, genrand_19650218, sizeof(genrand_19650218));
    const uint32_t add[2] = {key[0], key_length == 2 ? key[1] + 1U : key[0]};
    uint32_t prev = mt[0];
    for (int i = 1; i < N; i++) { /* steps t = 0..N-2 */
        prev = (mt[i] ^ ((prev ^ (prev >> 30)) * 1664525U)) + add[(i - 1) & 1];
        mt[i] = prev;
    }
    mt[0] = prev;
    prev = (mt[1] ^ ((prev ^ (prev >> 30)) * 1664525U)) + add[1]; /* step t = N-1 (odd), at i = 1 */
    mt[1] = prev;
    for (int i = 2; i < N; i++) {
        prev = (mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - (uint32_t)i;
        mt[i] = prev;
    }
    mt[0] = prev;
    mt[1] = (mt[1] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - 1U; /* the last step, at i = 1 */
    mt[0] = 0x80000000U;
}

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

/* -- MersenneDraws: a whole generator seeded like random.Random(seed) for 0 <= seed < 2**64 ---------- */

typedef struct {
    PyObject_HEAD
    uint32_t mt[N];
    int index;
} DrawsObject;

/* genrand_uint32 of CPython's Modules/_randommodule.c */
static uint32_t next_output(DrawsObject *self) {
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y, *mt = self->mt;
    if (self->index >= N) {
        int kk;
        for (kk = 0; kk < N - M; kk++) {
            y = (mt[kk] & 0x80000000U) | (mt[kk + 1] & 0x7fffffffU);
            mt[kk] = mt[kk + M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < N - 1; kk++) {
            y = (mt[kk] & 0x80000000U) | (mt[kk + 1] & 0x7fffffffU);
            mt[kk] = mt[kk + (M - N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (mt[N - 1] & 0x80000000U) | (mt[0] & 0x7fffffffU);
        mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        self->index = 0;
    }
    y = mt[self->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

/* random.py's _randbelow_with_getrandbits(n) for 0 < n < 2**32 */
static uint32_t below(DrawsObject *self, uint64_t n) {
    int k = 0;
    while (k < 32 && ((uint64_t)1 << k) <= n) k++; /* n.bit_length() */
    uint32_t r;
    do {
        r = next_output(self) >> (32 - k);
    } while (r >= n);
    return r;
}

/* n for below(n), or 0 with an exception set: the methods cover 0 < n < 2**32 */
static uint64_t checked_width(long long n) {
    if (n <= 0 || n >= ((long long)1 << 32)) {
        PyErr_SetString(PyExc_ValueError, "MersenneDraws covers ranges of 1 to 2**32 - 1 values");
        return 0;
    }
    return (uint64_t)n;
}

static PyObject *Draws_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *n;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "MersenneDraws(seed) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "MersenneDraws", 1, 1, &n)) return NULL;
    if (!PyLong_Check(n)) {
        PyErr_SetString(PyExc_TypeError, "MersenneDraws(seed) takes an int");
        return NULL;
    }
    /* OverflowError below 0 and from 2**64 on (random.Random keys those by more or other words) */
    unsigned long long seed = PyLong_AsUnsignedLongLong(n);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    DrawsObject *self = (DrawsObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    /* CPython keys Random(n) by n's 32-bit words, least significant first, as many as n needs (>= 1). */
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    seeded_state(self->mt, key, key[1] ? 2 : 1);
    self->index = N;
    return (PyObject *)self;
}

static PyObject *Draws_random(DrawsObject *self, PyObject *unused) {
    uint32_t a = next_output(self) >> 5, b = next_output(self) >> 6;
    return PyFloat_FromDouble((a * 67108864.0 + b) * (1.0 / 9007199254740992.0));
}

static PyObject *Draws_below(DrawsObject *self, PyObject *arg) {
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    uint64_t width = checked_width(n);
    if (!width) return NULL;
    return PyLong_FromUnsignedLong(below(self, width));
}

static PyObject *Draws_randint(DrawsObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "randint(a, b) takes two ints");
        return NULL;
    }
    long long a = PyLong_AsLongLong(args[0]), b = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    uint64_t width = checked_width(b - a + 1);
    if (!width) return NULL;
    return PyLong_FromLongLong(a + (long long)below(self, width));
}

static PyObject *Draws_randrange(DrawsObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "randrange(start, stop, step) takes three ints");
        return NULL;
    }
    long long start = PyLong_AsLongLong(args[0]), stop = PyLong_AsLongLong(args[1]);
    long long step = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (step <= 0) {
        PyErr_SetString(PyExc_ValueError, "MersenneDraws.randrange takes a positive step");
        return NULL;
    }
    uint64_t width = checked_width((stop - start + step - 1) / step);
    if (!width) return NULL;
    return PyLong_FromLongLong(start + step * (long long)below(self, width));
}

static PyObject *Draws_choice(DrawsObject *self, PyObject *seq) {
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0) return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "Cannot choose from an empty sequence");
        return NULL;
    }
    uint64_t width = checked_width(n);
    if (!width) return NULL;
    return PySequence_GetItem(seq, (Py_ssize_t)below(self, width));
}

static PyMethodDef draws_methods[] = {
    {"random", (PyCFunction)Draws_random, METH_NOARGS, "random(): random.Random.random()"},
    {"below", (PyCFunction)Draws_below, METH_O, "below(n): random.Random._randbelow(n), 0 < n < 2**32"},
    {"randint", (PyCFunction)(void (*)(void))Draws_randint, METH_FASTCALL, "randint(a, b)"},
    {"randrange", (PyCFunction)(void (*)(void))Draws_randrange, METH_FASTCALL,
     "randrange(start, stop, step), step > 0"},
    {"choice", (PyCFunction)Draws_choice, METH_O, "choice(seq)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DrawsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "paired_rollouts.noise._fate_draws.MersenneDraws",
    .tp_basicsize = sizeof(DrawsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "MersenneDraws(seed): random.Random(seed)'s generator (0 <= seed < 2**64) with random,\n"
              "randint, randrange (positive step), choice and below (_randbelow) for ranges below 2**32.",
    .tp_new = Draws_new,
    .tp_methods = draws_methods,
};

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
    if (PyType_Ready(&DrawsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&DrawsType);
    if (PyModule_AddObject(m, "MersenneDraws", (PyObject *)&DrawsType) < 0) {
        Py_DECREF(&DrawsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
