/* World generation's draws exactly as CPython's random.Random makes them, without random.py's
 * Python-level calls, and the world itself built in C.
 *
 * A world (docs/simulator.md#world-generation) draws about 1,300 numbers from one Random(seed) through
 * randint, choice and randrange, each two or three Python calls deep in random.py. MersenneDraws(seed)
 * is that generator (the same seeding, genrand_uint32 and twist as Modules/_randommodule.c; the seeding
 * shared with the fate helper in pairing/_mersenne.h) with those methods in C: _randbelow(n) is
 * getrandbits(n.bit_length()) until below n, getrandbits(k <= 32) the top k bits of one output.
 * backoffice/world.py uses it only where its import check finds every method equal to random.Random's;
 * tests/test_world.py compares whole worlds built both ways.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_mersenne.h"

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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "paired_rollouts.backoffice._world_draws.MersenneDraws",
    .tp_basicsize = sizeof(DrawsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "MersenneDraws(seed): random.Random(seed)'s generator (0 <= seed < 2**64) with random,\n"
              "randint, randrange (positive step), choice and below (_randbelow) for ranges below 2**32.",
    .tp_new = Draws_new,
    .tp_methods = draws_methods,
};

/* -- initial_world: docs/simulator.md#world-generation in C -------------------------------------------- */
/* backoffice/world.py's reference_initial_state, draw for draw and record for record (the same keys in
 * the same order, the same values and types), on a MersenneDraws generator. In Python a world costs about
 * 5M instructions with its draws in C: dict and string building, not the draws. The Python generator stays
 * the reference: world.py compares the two on import and uses this one only where they agree, and
 * tests/test_world.py compares whole worlds on many seeds. Word lists and sizes come from world.py
 * (WORLD_WORDS order below; every word ASCII, no first name with a space); the probabilities and ranges
 * of the draws are the contract's, written here a second time. */

enum {
    W_FIRST, W_LAST, W_STREETS, W_CITIES, W_TIERS, W_PRODUCTS, W_STOCKS, W_STATUSES, W_STATUS_WEIGHTS,
    W_CARRIERS, W_REASONS, W_CATEGORIES, W_PRIORITIES, W_SUMMARIES, W_TICKET_STATUSES, W_COUNT
};
enum { ST_PENDING, ST_PAID, ST_SHIPPED, ST_DELIVERED, ST_CANCELLED }; /* ORDER_STATUSES order */
enum {
    K_customer_id, K_name, K_email, K_phone, K_address, K_tier, K_street, K_city, K_postal_code, K_sku,
    K_price_cents, K_stock, K_order_id, K_items, K_quantity, K_unit_price_cents, K_status,
    K_shipping_address, K_placed_on_day, K_paid_before_cancel, K_refunds, K_reservations, K_shipment_id,
    K_carrier, K_scheduled_day, K_amount_cents, K_reason, K_ticket_id, K_category, K_priority, K_summary,
    T_delivered, T_in_transit, T_cancelled_order, K_COUNT
};
static const char *const KEY_TEXT[K_COUNT] = {
    "customer_id", "name", "email", "phone", "address", "tier", "street", "city", "postal_code", "sku",
    "price_cents", "stock", "order_id", "items", "quantity", "unit_price_cents", "status",
    "shipping_address", "placed_on_day", "paid_before_cancel", "refunds", "reservations", "shipment_id",
    "carrier", "scheduled_day", "amount_cents", "reason", "ticket_id", "category", "priority", "summary",
    "delivered", "in_transit", "cancelled order",
};
static PyObject *K[K_COUNT]; /* interned, like the literals of the Python generator */
#define MAX_RECORDS 1000
#define TEXT_MAX 200

static double draw_random(DrawsObject *d) {
    uint32_t a = next_output(d) >> 5, b = next_output(d) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

static long draw_int(DrawsObject *d, long a, long b) { return a + (long)below(d, (uint64_t)(b - a + 1)); }

/* choice(seq) of a tuple: borrowed */
static PyObject *draw_choice(DrawsObject *d, PyObject *tuple) {
    return PyTuple_GET_ITEM(tuple, (Py_ssize_t)below(d, (uint64_t)PyTuple_GET_SIZE(tuple)));
}

static PyObject *own(PyObject *o) {
    Py_XINCREF(o);
    return o;
}

/* An ASCII str from pieces: text_str / text_c / text_long append, text_done makes the str. */
typedef struct {
    char buf[TEXT_MAX];
    Py_ssize_t n;
} Text;

static void text_c(Text *t, const char *s) {
    size_t n = strlen(s);
    if (t->n + (Py_ssize_t)n <= TEXT_MAX) memcpy(t->buf + t->n, s, n);
    t->n += (Py_ssize_t)n;
}

static void text_str(Text *t, PyObject *u, int lower) { /* u is ASCII (checked on entry) */
    Py_ssize_t n = PyUnicode_GET_LENGTH(u);
    if (t->n + n <= TEXT_MAX) {
        const char *s = (const char *)PyUnicode_1BYTE_DATA(u);
        for (Py_ssize_t k = 0; k < n; k++)
            t->buf[t->n + k] = lower && s[k] >= 'A' && s[k] <= 'Z' ? (char)(s[k] + 32) : s[k];
    }
    t->n += n;
}

static void text_digits(Text *t, long v, int width) { /* str(v) zero-padded to width (v >= 0) */
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 || n < width);
    if (t->n + n <= TEXT_MAX)
        for (int k = 0; k < n; k++) t->buf[t->n + k] = digits[n - 1 - k];
    t->n += n;
}

static void text_long(Text *t, long v) { text_digits(t, v, 1); }

static PyObject *text_done(const Text *t) {
    if (t->n > TEXT_MAX) {
        PyErr_SetString(PyExc_ValueError, "initial_world: a text longer than it covers");
        return NULL;
    }
    PyObject *u = PyUnicode_New(t->n, 127);
    if (u != NULL) memcpy(PyUnicode_1BYTE_DATA(u), t->buf, (size_t)t->n);
    return u;
}

static PyObject *id_text(const char *prefix, long number) { /* C0001, SKU-0001: f"{prefix}{number:04d}" */
    Text t = {.n = 0};
    text_c(&t, prefix);
    text_digits(&t, number, 4);
    return text_done(&t);
}

/* A dict of n items in the given key order; takes the values (a NULL value fails it). */
static PyObject *record(int n, const int *keys, PyObject **values) {
    PyObject *dict = PyDict_New();
    int bad = dict == NULL;
    for (int k = 0; k < n; k++) {
        if (!bad) bad = values[k] == NULL || PyDict_SetItem(dict, K[keys[k]], values[k]) < 0;
        Py_XDECREF(values[k]);
    }
    if (bad) Py_CLEAR(dict);
    return dict;
}
#define RECORD(n, keys, values) record((n), (const int[]){keys}, (PyObject *[]){values})
#define ARGS(...) __VA_ARGS__

/* _random_address(rng): {"street": f"{randint(1, 250)} {choice(STREETS)}", "city", "postal_code"} */
static PyObject *random_address(DrawsObject *d, PyObject **words) {
    Text street = {.n = 0}, postal = {.n = 0};
    text_long(&street, draw_int(d, 1, 250));
    text_c(&street, " ");
    text_str(&street, draw_choice(d, words[W_STREETS]), 0);
    PyObject *city = own(draw_choice(d, words[W_CITIES]));
    text_long(&postal, draw_int(d, 1000, 9999));
    return RECORD(3, ARGS(K_street, K_city, K_postal_code), ARGS(text_done(&street), city, text_done(&postal)));
}

static int append(PyObject *list, PyObject *item) { /* takes item */
    int rc = item == NULL ? -1 : PyList_Append(list, item);
    Py_XDECREF(item);
    return rc;
}

typedef struct {
    int count;
    int sku[3], quantity[3];
} Items;

static int words_supported(PyObject **words) {
    for (int k = 0; k < W_COUNT; k++) {
        if (k == W_STOCKS || k == W_STATUS_WEIGHTS) continue;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(words[k]); j++) {
            PyObject *w = PyTuple_GET_ITEM(words[k], j);
            if (!PyUnicode_CheckExact(w) || !PyUnicode_IS_ASCII(w) || PyUnicode_GET_LENGTH(w) > 80) return 0;
            if (k == W_FIRST && PyUnicode_FindChar(w, ' ', 0, PyUnicode_GET_LENGTH(w), 1) != -1) return 0;
        }
    }
    return 1;
}

static PyObject *initial_world(PyObject *module, PyObject *args) {
    PyObject *seed_obj, *word_lists;
    int n_customers, n_products, n_orders, n_tickets, today;
    if (!PyArg_ParseTuple(args, "OO!(iiiii):initial_world", &seed_obj, &PyTuple_Type, &word_lists,
                          &n_customers, &n_products, &n_orders, &n_tickets, &today))
        return NULL;
    PyObject *words[W_COUNT];
    int ok = PyTuple_GET_SIZE(word_lists) == W_COUNT;
    for (int k = 0; ok && k < W_COUNT; k++) {
        words[k] = PyTuple_GET_ITEM(word_lists, k);
        ok = PyTuple_Check(words[k]) && PyTuple_GET_SIZE(words[k]) > 0;
    }
    /* sample() keeps a set of picks (population > 21) and orders take 1..3 of the products */
    ok = ok && words_supported(words) && n_customers >= 2 && n_customers <= MAX_RECORDS && n_products >= 22 &&
         n_products <= MAX_RECORDS && n_orders >= 1 && n_orders <= MAX_RECORDS && n_tickets >= 0 &&
         n_tickets <= MAX_RECORDS && PyTuple_GET_SIZE(words[W_PRODUCTS]) >= n_products &&
         PyTuple_GET_SIZE(words[W_STATUSES]) == 5 && PyTuple_GET_SIZE(words[W_STATUS_WEIGHTS]) == 5;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "initial_world: sizes or word lists outside what it covers");
        return NULL;
    }
    PyObject *seed_args = PyTuple_Pack(1, seed_obj);
    if (seed_args == NULL) return NULL;
    DrawsObject *d = (DrawsObject *)Draws_new(&DrawsType, seed_args, NULL);
    Py_DECREF(seed_args);
    if (d == NULL) return NULL;

    PyObject *customers = PyDict_New(), *products = PyDict_New(), *orders = PyDict_New();
    PyObject *shipments = PyDict_New(), *tickets = PyDict_New(), *used = PySet_New(NULL);
    PyObject *cids = PyList_New(0), *skus = PyList_New(0), *oids = PyList_New(0), *names = NULL;
    PyObject *lasts = PyList_New(0), *addresses = PyList_New(0), *order_list = PyList_New(0);
    PyObject *result = NULL;
    long *price = PyMem_Calloc(n_products, sizeof(long)), *stock = PyMem_Calloc(n_products, sizeof(long));
    long *reserved = PyMem_Calloc(n_products, sizeof(long));
    Items *items = PyMem_Calloc(n_orders, sizeof(Items));
    int *status = PyMem_Calloc(n_orders, sizeof(int)), *fully_reserved = PyMem_Calloc(n_orders, sizeof(int));
    if (!price || !stock || !reserved || !items || !status || !fully_reserved) {
        PyErr_NoMemory();
        goto done;
    }
    if (!customers || !products || !orders || !shipments || !tickets || !used || !cids || !skus || !oids ||
        !lasts || !addresses || !order_list)
        goto done;

    /* 1. customers */
    for (int i = 1; i <= n_customers; i++) {
        PyObject *first, *last;
        if (i > 1 && draw_random(d) < 0.3) { /* an earlier customer's last name: name.split(" ", 1)[1] */
            last = PyList_GET_ITEM(lasts, draw_int(d, 1, i - 1) - 1);
            first = draw_choice(d, words[W_FIRST]);
        } else {
            first = draw_choice(d, words[W_FIRST]);
            last = draw_choice(d, words[W_LAST]);
        }
        PyObject *name;
        for (;;) {
            Text t = {.n = 0};
            text_str(&t, first, 0);
            text_c(&t, " ");
            text_str(&t, last, 0);
            name = text_done(&t);
            int taken = name == NULL ? -1 : PySet_Contains(used, name);
            if (taken == 0) break;
            Py_XDECREF(name);
            if (taken < 0) goto done;
            first = draw_choice(d, words[W_FIRST]);
        }
        Text phone = {.n = 0}, email = {.n = 0};
        text_c(&phone, "+880");
        for (int k = 0; k < 10; k++) phone.buf[phone.n++] = (char)('0' + below(d, 10));
        PyObject *address = random_address(d, words);
        PyObject *tier = own(draw_choice(d, words[W_TIERS]));
        text_str(&email, first, 1);
        text_c(&email, ".");
        text_str(&email, last, 1);
        text_long(&email, i);
        text_c(&email, "@example.com");
        PyObject *cid = id_text("C", i);
        int bad = cid == NULL || PySet_Add(used, name) < 0 || PyList_Append(cids, cid) < 0 ||
                  PyList_Append(lasts, last) < 0 || PyList_Append(addresses, address) < 0;
        PyObject *customer = RECORD(6, ARGS(K_customer_id, K_name, K_email, K_phone, K_address, K_tier),
                                    ARGS(own(cid), name, text_done(&email), text_done(&phone), address, tier));
        bad = bad || customer == NULL || PyDict_SetItem(customers, cid, customer) < 0;
        Py_XDECREF(customer);
        Py_XDECREF(cid);
        if (bad) goto done;
    }

    /* 2. products: shuffle a copy of the names; price and stock per product (records after step 5) */
    names = PySequence_List(words[W_PRODUCTS]);
    if (names == NULL) goto done;
    for (Py_ssize_t i = PyList_GET_SIZE(names) - 1; i > 0; i--) {
        Py_ssize_t j = (Py_ssize_t)below(d, (uint64_t)(i + 1));
        PyObject *tmp = PyList_GET_ITEM(names, i);
        PyList_SET_ITEM(names, i, PyList_GET_ITEM(names, j));
        PyList_SET_ITEM(names, j, tmp);
    }
    for (int i = 0; i < n_products; i++) {
        price[i] = 500 + 50 * (long)below(d, (50001 - 500 + 50 - 1) / 50); /* randrange(500, 50001, 50) */
        stock[i] = PyLong_AsLong(draw_choice(d, words[W_STOCKS]));
        if ((stock[i] == -1 && PyErr_Occurred()) || append(skus, id_text("SKU-", i + 1)) < 0) goto done;
    }

    /* 3. orders */
    double cum[5], total = 0.0; /* choices(): cumulative weights, bisect_right(cum, random() * cum[4], 0, 4) */
    for (int k = 0; k < 5; k++) cum[k] = total += PyFloat_AsDouble(PyTuple_GET_ITEM(words[W_STATUS_WEIGHTS], k));
    if (PyErr_Occurred()) goto done;
    for (int i = 0; i < n_orders; i++) {
        int c = (int)below(d, (uint64_t)n_customers);
        PyObject *cid = PyList_GET_ITEM(cids, c);
        Items *it = &items[i];
        it->count = (int)draw_int(d, 1, 3);
        for (int k = 0; k < it->count; k++) { /* sample(skus, count): a repeated pick is drawn again */
            int j, repeat;
            do {
                j = (int)below(d, (uint64_t)n_products);
                repeat = 0;
                for (int m = 0; m < k; m++) repeat |= it->sku[m] == j;
            } while (repeat);
            it->sku[k] = j;
        }
        PyObject *item_list = PyList_New(0);
        for (int k = 0; item_list && k < it->count; k++) {
            it->quantity[k] = (int)draw_int(d, 1, 3);
            if (append(item_list, RECORD(3, ARGS(K_sku, K_quantity, K_unit_price_cents),
                                         ARGS(own(PyList_GET_ITEM(skus, it->sku[k])),
                                              PyLong_FromLong(it->quantity[k]), PyLong_FromLong(price[it->sku[k]])))) < 0)
                Py_CLEAR(item_list);
        }
        double x = draw_random(d) * (cum[4] + 0.0);
        int lo = 0, hi = 4;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (x < cum[mid]) hi = mid;
            else lo = mid + 1;
        }
        status[i] = lo;
        PyObject *ship_to = draw_random(d) < 0.8 ? PyDict_Copy(PyList_GET_ITEM(addresses, c)) : random_address(d, words);
        long placed = today - draw_int(d, 0, 30);
        PyObject *oid = id_text("O", i + 1), *refunds = PyList_New(0), *reservations = PyList_New(0);
        PyObject *shipment_id = own(Py_None), *paid_before_cancel = own(Py_False);
        int bad = item_list == NULL || oid == NULL || refunds == NULL || reservations == NULL;
        if (!bad && (status[i] == ST_SHIPPED || status[i] == ST_DELIVERED)) {
            Py_SETREF(shipment_id, id_text("S", (long)PyDict_GET_SIZE(shipments) + 1));
            PyObject *carrier = own(draw_choice(d, words[W_CARRIERS]));
            long day = placed + draw_int(d, 1, 5);
            PyObject *shipment = RECORD(5, ARGS(K_shipment_id, K_order_id, K_carrier, K_scheduled_day, K_status),
                                        ARGS(own(shipment_id), own(oid), carrier, PyLong_FromLong(day),
                                             own(K[status[i] == ST_DELIVERED ? T_delivered : T_in_transit])));
            bad = shipment == NULL || PyDict_SetItem(shipments, shipment_id, shipment) < 0;
            Py_XDECREF(shipment);
            if (!bad && status[i] == ST_DELIVERED && draw_random(d) < 0.3) {
                long amount = price[it->sku[below(d, (uint64_t)it->count)]];
                bad = append(refunds, RECORD(2, ARGS(K_amount_cents, K_reason),
                                             ARGS(PyLong_FromLong(amount), own(draw_choice(d, words[W_REASONS]))))) < 0;
            }
        } else if (!bad && status[i] == ST_PAID && draw_random(d) < 0.5) {
            fully_reserved[i] = 1;
            for (int k = 0; !bad && k < it->count; k++) {
                reserved[it->sku[k]] += it->quantity[k];
                bad = append(reservations, RECORD(2, ARGS(K_sku, K_quantity),
                                                  ARGS(own(PyList_GET_ITEM(skus, it->sku[k])),
                                                       PyLong_FromLong(it->quantity[k])))) < 0;
            }
        } else if (!bad && status[i] == ST_CANCELLED) {
            int paid = draw_random(d) < 0.5;
            Py_SETREF(paid_before_cancel, own(paid ? Py_True : Py_False));
            if (paid && draw_random(d) < 0.6) {
                long order_total = 0;
                for (int k = 0; k < it->count; k++) order_total += it->quantity[k] * price[it->sku[k]];
                bad = append(refunds, RECORD(2, ARGS(K_amount_cents, K_reason),
                                             ARGS(PyLong_FromLong(order_total), own(K[T_cancelled_order])))) < 0;
            }
        }
        PyObject *order =
            bad ? NULL
                : RECORD(10,
                         ARGS(K_order_id, K_customer_id, K_items, K_status, K_shipping_address, K_placed_on_day,
                              K_paid_before_cancel, K_refunds, K_reservations, K_shipment_id),
                         ARGS(own(oid), own(cid), own(item_list), own(PyTuple_GET_ITEM(words[W_STATUSES], status[i])),
                              own(ship_to), PyLong_FromLong(placed), own(paid_before_cancel), own(refunds),
                              own(reservations), own(shipment_id)));
        bad = order == NULL || PyDict_SetItem(orders, oid, order) < 0 || PyList_Append(oids, oid) < 0;
        Py_XDECREF(order);
        Py_XDECREF(oid);
        Py_XDECREF(item_list);
        Py_XDECREF(ship_to);
        Py_XDECREF(refunds);
        Py_XDECREF(reservations);
        Py_XDECREF(shipment_id);
        Py_XDECREF(paid_before_cancel);
        if (bad) goto done;
    }

    /* 4. stock floor; 5. top-up of each paid order not fully reserved (the 0.7 draw only for those):
     * such an order has no reservations, so each item misses its whole quantity */
    for (int k = 0; k < n_products; k++)
        if (stock[k] < reserved[k]) stock[k] = reserved[k];
    for (int i = 0; i < n_orders; i++) {
        if (status[i] != ST_PAID || fully_reserved[i] || !(draw_random(d) < 0.7)) continue;
        for (int k = 0; k < items[i].count; k++) {
            int sku = items[i].sku[k];
            long shortfall = items[i].quantity[k] - (stock[sku] - reserved[sku]);
            if (shortfall > 0) stock[sku] += shortfall;
        }
    }
    for (int k = 0; k < n_products; k++) {
        PyObject *sku = PyList_GET_ITEM(skus, k);
        PyObject *product = RECORD(4, ARGS(K_sku, K_name, K_price_cents, K_stock),
                                   ARGS(own(sku), own(PyList_GET_ITEM(names, k)), PyLong_FromLong(price[k]),
                                        PyLong_FromLong(stock[k])));
        int bad = product == NULL || PyDict_SetItem(products, sku, product) < 0;
        Py_XDECREF(product);
        if (bad) goto done;
    }

    /* 6. tickets */
    for (int i = 1; i <= n_tickets; i++) {
        PyObject *oid = PyList_GET_ITEM(oids, (Py_ssize_t)below(d, (uint64_t)n_orders));
        PyObject *customer_id = PyDict_GetItem(PyDict_GetItem(orders, oid), K[K_customer_id]);
        PyObject *linked = draw_random(d) < 0.7 ? oid : Py_None;
        PyObject *tid = id_text("T", i);
        PyObject *category = own(draw_choice(d, words[W_CATEGORIES]));
        PyObject *priority = own(draw_choice(d, words[W_PRIORITIES]));
        PyObject *summary = own(draw_choice(d, words[W_SUMMARIES]));
        PyObject *state = own(draw_choice(d, words[W_TICKET_STATUSES]));
        PyObject *ticket = RECORD(7, ARGS(K_ticket_id, K_customer_id, K_order_id, K_category, K_priority, K_summary, K_status),
                                  ARGS(own(tid), own(customer_id), own(linked), category, priority, summary, state));
        int bad = ticket == NULL || PyDict_SetItem(tickets, tid, ticket) < 0;
        Py_XDECREF(ticket);
        Py_XDECREF(tid);
        if (bad) goto done;
    }
    result = PyTuple_Pack(5, customers, products, orders, shipments, tickets);

done:
    PyMem_Free(price);
    PyMem_Free(stock);
    PyMem_Free(reserved);
    PyMem_Free(items);
    PyMem_Free(status);
    PyMem_Free(fully_reserved);
    Py_XDECREF(customers);
    Py_XDECREF(products);
    Py_XDECREF(orders);
    Py_XDECREF(shipments);
    Py_XDECREF(tickets);
    Py_XDECREF(used);
    Py_XDECREF(cids);
    Py_XDECREF(skus);
    Py_XDECREF(oids);
    Py_XDECREF(names);
    Py_XDECREF(lasts);
    Py_XDECREF(addresses);
    Py_XDECREF(order_list);
    Py_DECREF(d);
    return result;
}

static PyMethodDef methods[] = {
    {"initial_world", (PyCFunction)initial_world, METH_VARARGS,
     "initial_world(seed, words, (customers, products, orders, tickets, today)) -> the five collections of\n"
     "backoffice/world.py's build_initial_state(seed) (0 <= seed < 2**64), words in WORLD_WORDS order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_world_draws", NULL, -1, methods};

PyMODINIT_FUNC PyInit__world_draws(void) {
    init_constant_part();
    for (int k = 0; k < K_COUNT; k++)
        if ((K[k] = PyUnicode_InternFromString(KEY_TEXT[k])) == NULL) return NULL;
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
