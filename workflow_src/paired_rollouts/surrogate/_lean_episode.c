/* The surrogate's episode, compiled: surrogate/menu.py's ``play`` in the back office's budgeted, noisy
 * call path, then the grader's success (docs/simulator.md#speed, seventh pass).
 *
 * It is a second implementation of the same episode, not a model of it; the Python one stays the
 * reference. surrogate/lean.py compiles a task into the calls its episode can make (the plan's, their
 * wrong variants, the reads of their orders) with every argument check that does not depend on the
 * world's state already made, and the world into its orders and stock; this file keeps the state that
 * changes (order records copied on write, stock and reservations, the shipments and tickets created, the
 * clock, rate limits, outages and repeat counts), takes the policy's draws from the episode's own
 * random.Random, computes each fate as NoiseSchedule.fate does (or asks it), and grades by comparing the
 * final orders, stock, shipments and tickets with the expected state's, as the grader's normalisation
 * does. It returns the decisions, the success, the calls counted, the budget's end, the exposure and the
 * exact action score, and, for a full record, the calls that reached the API (lean.full_record replays
 * them for the Python grader and record). tests/test_lean_episode.py compares both paths decision by
 * decision and record by record.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_fate_core.h"
#include "_sha256.h"

/* tools (surrogate/lean.py TOOLS) */
enum { T_SEARCH, T_GET_ORDER, T_ADDRESS, T_CANCEL, T_REFUND, T_RESERVE, T_SHIP, T_TICKET, N_TOOLS };
/* order statuses (backoffice/words.py ORDER_STATUSES, checked by surrogate/lean.py) */
enum { S_PENDING, S_PAID, S_SHIPPED, S_DELIVERED, S_CANCELLED };
/* actions (surrogate/lean.py ACTIONS) */
enum { A_NEXT, A_RETRY, A_WAIT, A_PAGE, A_REREAD, A_CHECK, A_WRONG, A_SKIP, A_FINISH, A_PROCEED, N_ACTIONS };
/* contexts: surrogate/policy.py CONTEXTS in order, then the two ends */
enum {
    C_NEXT_READ, C_NEXT_WRITE, C_NEXT_WRITE_UNREAD, C_AFTER_WRITE, C_AFTER_LAST_WRITE,
    C_UNAVAILABLE_READ, C_UNAVAILABLE_WRITE, C_RATE_READ, C_RATE_WRITE, C_TIMEOUT, C_ERROR,
    C_TRUNCATED, C_WAITED, C_UNVERIFIED, N_CONTEXTS, C_DONE = 100, C_OVER = 101
};
/* what a call returned, as play's ``_code`` reads it */
enum { RES_OK, RES_ERROR, RES_UNAVAILABLE, RES_RATE_LIMITED, RES_TIMEOUT, RES_BUDGET };
/* fate kinds */
enum { F_NONE, F_TRANSIENT, F_OUTAGE, F_RATE_LIMIT, F_STALE, F_FIELD_DROPOUT, F_TRUNCATE, F_TIMEOUT };

#define MAX_ITEMS 3
#define MAX_REFUNDS 80      /* one at generation + at most one per counted call (<= MAX_TURNS) */
#define MAX_RESERVATIONS 16 /* units reserved never exceed the 9 an order can hold */
#define MAX_CREATED 80      /* shipments or tickets created: at most one per counted call */
#define MAX_COPIES 80       /* order copies: at most one per commit */
#define ORDER_VIEW_KEYS 12  /* the get_order view: the 10 record keys + total_cents + refunded_cents */
/* positions in the view's sorted keys (a dropped field) */
#define KEY_REFUNDED_CENTS 5
#define KEY_RESERVATIONS 7
#define KEY_SHIPPING_ADDRESS 9
#define KEY_STATUS 10

typedef struct {
    int customer, n_items, status, paid_before_cancel, has_shipment, n_refunds, n_res;
    int item_sku[MAX_ITEMS], item_qty[MAX_ITEMS];
    long long item_price[MAX_ITEMS];
    PyObject *street, *city, *postal; /* borrowed from the world's or the task's references */
    int32_t refunds[MAX_REFUNDS];
    int16_t res_sku[MAX_RESERVATIONS], res_qty[MAX_RESERVATIONS];
} Order;

typedef struct {
    int n_orders, n_products;
    Order *orders;
    long long *stock, *reserved; /* per sku: stock and units reserved over all orders */
    PyObject *refs;              /* keeps the address strings alive */
} World;

typedef struct {
    int order, carrier, day;
} Shipment;
typedef struct {
    int customer, order, category, priority;
} Ticket;

/* A state of the world during an episode: order records by pointer (the world's or copies). */
typedef struct {
    const World *world;
    Order **orders;
    long long *stock, *reserved;
    int version, n_ships, n_tickets, n_copies;
    Shipment ships[MAX_CREATED];
    Ticket tickets[MAX_CREATED];
    Order *copies; /* MAX_COPIES */
    int last_order; /* the order the last commit changed (-1: none) and its record before it */
    Order *last_prev;
} State;

typedef struct {
    int tool, write, key, ok; /* ok: every check that does not depend on the state passes */
    PyObject *name, *event;   /* the tool's name and the call's event key (for the fate) */
    const char *name_utf8, *event_utf8;
    Py_ssize_t name_len, event_len;
    int order, sku, customer, carrier, day, category, priority, linked;
    long long amount, qty, needed, offset, hits;
    PyObject *street, *city, *postal;          /* stripped (what the tool stores) */
    PyObject *raw_street, *raw_city, *raw_postal; /* as given (what a check compares) */
    int read; /* the get_order call of this call's order_id (-1: none) */
} Spec;

typedef struct {
    PyObject *world_capsule, *refs;
    World *world;
    int n_specs, n_plan, n_keys;
    Spec *specs;
    int *plan_next, *plan_wrong, *plan_write, *plan_unread; /* unread: order, -2 never, -3 always */
    State expected;
} Task;

typedef struct {
    PyObject *ctx[N_CONTEXTS], *avail[N_CONTEXTS][2];
    int n_avail[N_CONTEXTS][2], pos[N_CONTEXTS][2][8];
    double cdf[N_CONTEXTS][2][8], probs[N_CONTEXTS][2][8];
} Table;

/* A noise configuration's fault tables (noise/schedule.py _fate_tables) per tool of TOOLS. */
typedef struct {
    int present[N_TOOLS], n_types[N_TOOLS], kinds[N_TOOLS][8], challenge;
    double rate[N_TOOLS], cum[N_TOOLS][8];
} Faults;

#define MAX_PARAMETERS 64
#define FATE_CACHE 64
static int ACTION_OF[N_CONTEXTS][8];
static int PARAM_OF[N_CONTEXTS][8]; /* the parameter of each menu position (-1: the reference action) */
static PyObject *SETUP_CTX[N_CONTEXTS], *SETUP_AVAIL[N_CONTEXTS][2];
static int N_PARAMETERS = 0;
static int MAX_TURNS = 64;
static PyObject *SMALL_INTS[16];
static const long long RETRY_AFTER[4] = {15, 30, 45, 60};
/* the tools in the enum's order (setup checks that surrogate/lean.py TOOLS names them so) */
static const char *NAMES[N_TOOLS] = {"search_customers", "get_order",  "update_shipping_address", "cancel_order",
                                     "issue_refund",     "reserve_stock", "schedule_shipment",      "create_ticket"};

/* ---------------------------------------------------------------------------------------------- */
/* parsing helpers                                                                                */
/* ---------------------------------------------------------------------------------------------- */
static int get_int(PyObject *seq, Py_ssize_t i, long long *out) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    long long v = PyLong_AsLongLong(item);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static PyObject *fast(PyObject *obj, Py_ssize_t n, const char *what) {
    PyObject *seq = PySequence_Fast(obj, what);
    if (seq == NULL) return NULL;
    if (n >= 0 && PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd fields", what, n);
        Py_DECREF(seq);
        return NULL;
    }
    return seq;
}

/* ---------------------------------------------------------------------------------------------- */
/* the world                                                                                      */
/* ---------------------------------------------------------------------------------------------- */
static void world_free(PyObject *capsule) {
    World *w = PyCapsule_GetPointer(capsule, "lean_world");
    if (w == NULL) return;
    free(w->orders);
    free(w->stock);
    free(w->reserved);
    Py_XDECREF(w->refs);
    free(w);
}

/* world_of(orders, products, customers, skus, statuses): the compiled world of an initial state's order
 * and product records, read directly (surrogate/lean.py _compile_world's checks, in C); customers and
 * skus map ids to indices, statuses is ORDER_STATUSES. None where a record is not of the generator's
 * shape (the world is then played in Python). */
static PyObject *world_of(PyObject *module, PyObject *args) {
    PyObject *orders, *products, *customers, *skus, *statuses;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyDict_Type, &orders, &PyDict_Type, &products, &PyDict_Type,
                          &customers, &PyDict_Type, &skus, &PyTuple_Type, &statuses))
        return NULL;
    World *w = calloc(1, sizeof(World));
    if (w == NULL) return PyErr_NoMemory();
    w->n_orders = (int)PyDict_GET_SIZE(orders);
    w->n_products = (int)PyDict_GET_SIZE(products);
    w->orders = calloc(w->n_orders ? w->n_orders : 1, sizeof(Order));
    w->stock = calloc(w->n_products ? w->n_products : 1, sizeof(long long));
    w->reserved = calloc(w->n_products ? w->n_products : 1, sizeof(long long));
    w->refs = PyList_New(0);
    PyObject *capsule = PyCapsule_New(w, "lean_world", world_free);
    if (capsule == NULL) {
        free(w->orders), free(w->stock), free(w->reserved), Py_XDECREF(w->refs), free(w);
        return NULL;
    }
    if (w->orders == NULL || w->stock == NULL || w->reserved == NULL || w->refs == NULL) goto unsupported;
#define PLAIN_INT(obj) ((obj) != NULL && PyLong_CheckExact(obj))
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int j = 0;
    while (PyDict_Next(products, &pos, &key, &value)) {
        PyObject *stock = PyDict_Check(value) ? PyDict_GetItemString(value, "stock") : NULL;
        long long units = PLAIN_INT(stock) ? PyLong_AsLongLong(stock) : -1;
        if (units < 0 || units > INT32_MAX) goto unsupported;
        w->stock[j++] = units;
    }
    pos = 0, j = 0;
    while (PyDict_Next(orders, &pos, &key, &value)) {
        Order *o = &w->orders[j++];
        if (!PyDict_Check(value) || PyDict_GET_SIZE(value) != 10) goto unsupported;
        PyObject *customer = PyDict_GetItemString(value, "customer_id");
        PyObject *index = customer == NULL ? NULL : PyDict_GetItemWithError(customers, customer);
        PyObject *items = PyDict_GetItemString(value, "items"), *status = PyDict_GetItemString(value, "status");
        PyObject *address = PyDict_GetItemString(value, "shipping_address");
        PyObject *paid = PyDict_GetItemString(value, "paid_before_cancel");
        PyObject *refunds = PyDict_GetItemString(value, "refunds");
        PyObject *reservations = PyDict_GetItemString(value, "reservations");
        PyObject *shipment = PyDict_GetItemString(value, "shipment_id");
        if (PyErr_Occurred()) goto fail;
        if (index == NULL || items == NULL || !PyList_Check(items) || PyList_GET_SIZE(items) > MAX_ITEMS ||
            status == NULL || address == NULL || !PyDict_Check(address) || PyDict_GET_SIZE(address) != 3 ||
            paid == NULL || !PyBool_Check(paid) || refunds == NULL || !PyList_Check(refunds) ||
            PyList_GET_SIZE(refunds) > MAX_REFUNDS || reservations == NULL || !PyList_Check(reservations) ||
            PyList_GET_SIZE(reservations) > MAX_RESERVATIONS || shipment == NULL ||
            PyDict_GetItemString(value, "order_id") == NULL || PyDict_GetItemString(value, "placed_on_day") == NULL)
            goto unsupported;
        o->customer = (int)PyLong_AsLong(index);
        o->n_items = (int)PyList_GET_SIZE(items);
        for (int k = 0; k < o->n_items; k++) {
            PyObject *item = PyList_GET_ITEM(items, k);
            if (!PyDict_Check(item) || PyDict_GET_SIZE(item) != 3) goto unsupported;
            PyObject *sku = PyDict_GetItemString(item, "sku"), *qty = PyDict_GetItemString(item, "quantity");
            PyObject *price = PyDict_GetItemString(item, "unit_price_cents");
            PyObject *sku_index = sku == NULL ? NULL : PyDict_GetItemWithError(skus, sku);
            if (PyErr_Occurred()) goto fail;
            long units = PLAIN_INT(qty) ? PyLong_AsLong(qty) : -1;
            long long cents = PLAIN_INT(price) ? PyLong_AsLongLong(price) : -1;
            if (sku_index == NULL || units < 0 || units > INT16_MAX || cents < 0 || cents > INT32_MAX) goto unsupported;
            o->item_sku[k] = (int)PyLong_AsLong(sku_index);
            o->item_qty[k] = (int)units;
            o->item_price[k] = cents;
        }
        o->status = -1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(statuses); k++) {
            int same = PyObject_RichCompareBool(status, PyTuple_GET_ITEM(statuses, k), Py_EQ);
            if (same < 0) goto fail;
            if (same) {
                o->status = (int)k;
                break;
            }
        }
        o->street = PyDict_GetItemString(address, "street");
        o->city = PyDict_GetItemString(address, "city");
        o->postal = PyDict_GetItemString(address, "postal_code");
        if (o->status < 0 || o->street == NULL || o->city == NULL || o->postal == NULL ||
            !PyUnicode_CheckExact(o->street) || !PyUnicode_CheckExact(o->city) || !PyUnicode_CheckExact(o->postal))
            goto unsupported;
        if (PyList_Append(w->refs, address) < 0) goto fail; /* keeps the three strings alive */
        o->paid_before_cancel = paid == Py_True;
        o->n_refunds = (int)PyList_GET_SIZE(refunds);
        for (int k = 0; k < o->n_refunds; k++) {
            PyObject *refund = PyList_GET_ITEM(refunds, k);
            PyObject *cents = PyDict_Check(refund) ? PyDict_GetItemString(refund, "amount_cents") : NULL;
            long amount = PLAIN_INT(cents) ? PyLong_AsLong(cents) : -1;
            if (amount < 0 || amount > INT32_MAX) goto unsupported;
            o->refunds[k] = (int32_t)amount;
        }
        o->n_res = (int)PyList_GET_SIZE(reservations);
        for (int k = 0; k < o->n_res; k++) {
            PyObject *res = PyList_GET_ITEM(reservations, k);
            if (!PyDict_Check(res) || PyDict_GET_SIZE(res) != 2) goto unsupported;
            PyObject *sku = PyDict_GetItemString(res, "sku"), *qty = PyDict_GetItemString(res, "quantity");
            PyObject *sku_index = sku == NULL ? NULL : PyDict_GetItemWithError(skus, sku);
            if (PyErr_Occurred()) goto fail;
            long units = PLAIN_INT(qty) ? PyLong_AsLong(qty) : -1;
            if (sku_index == NULL || units < 0 || units > INT16_MAX) goto unsupported;
            o->res_sku[k] = (int16_t)PyLong_AsLong(sku_index);
            o->res_qty[k] = (int16_t)units;
            w->reserved[o->res_sku[k]] += o->res_qty[k];
        }
        o->has_shipment = shipment != Py_None;
    }
#undef PLAIN_INT
    if (PyErr_Occurred()) goto fail;
    return capsule;
unsupported: /* a number past the long range is a shape not covered too */
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError)) goto fail;
    PyErr_Clear();
    Py_DECREF(capsule);
    Py_RETURN_NONE;
fail:
    Py_DECREF(capsule);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* states and the tools                                                                           */
/* ---------------------------------------------------------------------------------------------- */
static int state_init(State *s, const World *w, Order *copies) {
    memset(s, 0, sizeof(State));
    s->world = w;
    s->orders = malloc(sizeof(Order *) * (w->n_orders ? w->n_orders : 1));
    s->stock = malloc(sizeof(long long) * (w->n_products ? w->n_products : 1));
    s->reserved = malloc(sizeof(long long) * (w->n_products ? w->n_products : 1));
    if (s->orders == NULL || s->stock == NULL || s->reserved == NULL) {
        free(s->orders), free(s->stock), free(s->reserved);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < w->n_orders; i++) s->orders[i] = &w->orders[i];
    memcpy(s->stock, w->stock, sizeof(long long) * w->n_products);
    memcpy(s->reserved, w->reserved, sizeof(long long) * w->n_products);
    s->copies = copies;
    s->last_order = -1;
    return 0;
}

static void state_free(State *s) {
    free(s->orders), free(s->stock), free(s->reserved);
    s->orders = NULL, s->stock = NULL, s->reserved = NULL;
}

/* A private copy of order i for a write; the record before it stays as it was (stale reads). */
static Order *own(State *s, int i) {
    if (s->n_copies >= MAX_COPIES) return NULL;
    Order *copy = &s->copies[s->n_copies++];
    *copy = *s->orders[i];
    s->last_prev = s->orders[i];
    s->last_order = i;
    s->orders[i] = copy;
    return copy;
}

static void commit(State *s) { s->version++; }

static long long total_of(const Order *o) {
    long long t = 0;
    for (int k = 0; k < o->n_items; k++) t += (long long)o->item_qty[k] * o->item_price[k];
    return t;
}

static long long refunded_of(const Order *o) {
    long long t = 0;
    for (int k = 0; k < o->n_refunds; k++) t += o->refunds[k];
    return t;
}

static long long reserved_on(const Order *o, int sku) {
    long long t = 0;
    for (int k = 0; k < o->n_res; k++)
        if (o->res_sku[k] == sku) t += o->res_qty[k];
    return t;
}

static void release_reservations(State *s, Order *o) {
    for (int k = 0; k < o->n_res; k++)
        if (o->res_sku[k] >= 0 && o->res_sku[k] < s->world->n_products) s->reserved[o->res_sku[k]] -= o->res_qty[k];
    o->n_res = 0;
}

#define OVERFLOW() (PyErr_SetString(PyExc_RuntimeError, "lean episode: a fixed capacity was exceeded"), -1)

/* A write on the live state (backoffice/tools.py): RES_OK after its effects and commit, RES_ERROR when any
 * check fails (a failed write changes nothing); -1 on a C error. */
static int write_call(State *s, const Spec *c) {
    if (!c->ok) return RES_ERROR;
    Order *o = c->order >= 0 ? s->orders[c->order] : NULL;
    switch (c->tool) {
    case T_ADDRESS:
        if (o->status != S_PENDING && o->status != S_PAID) return RES_ERROR;
        if ((o = own(s, c->order)) == NULL) return OVERFLOW();
        o->street = c->street, o->city = c->city, o->postal = c->postal;
        break;
    case T_CANCEL: {
        if (o->status != S_PENDING && o->status != S_PAID) return RES_ERROR;
        int was_paid = o->status == S_PAID;
        if ((o = own(s, c->order)) == NULL) return OVERFLOW();
        o->status = S_CANCELLED;
        o->paid_before_cancel = was_paid;
        release_reservations(s, o);
        break;
    }
    case T_REFUND:
        if (o->status == S_PENDING || o->status == S_SHIPPED) return RES_ERROR;
        if (o->status == S_CANCELLED && !o->paid_before_cancel) return RES_ERROR;
        if (c->amount > total_of(o) - refunded_of(o)) return RES_ERROR;
        if (o->n_refunds >= MAX_REFUNDS) return OVERFLOW();
        if ((o = own(s, c->order)) == NULL) return OVERFLOW();
        o->refunds[o->n_refunds++] = (int32_t)c->amount;
        break;
    case T_RESERVE: {
        if (o->status != S_PENDING && o->status != S_PAID) return RES_ERROR;
        long long already = reserved_on(o, c->sku);
        if (already + c->qty > c->needed) return RES_ERROR;
        if (c->qty > s->stock[c->sku] - s->reserved[c->sku]) return RES_ERROR;
        if (o->n_res >= MAX_RESERVATIONS) return OVERFLOW();
        if ((o = own(s, c->order)) == NULL) return OVERFLOW();
        o->res_sku[o->n_res] = (int16_t)c->sku, o->res_qty[o->n_res] = (int16_t)c->qty;
        o->n_res++;
        s->reserved[c->sku] += c->qty;
        break;
    }
    case T_SHIP:
        if (o->status != S_PAID) return RES_ERROR;
        for (int k = 0; k < o->n_items; k++)
            if (reserved_on(o, o->item_sku[k]) < o->item_qty[k]) return RES_ERROR;
        if (s->n_ships >= MAX_CREATED) return OVERFLOW();
        s->ships[s->n_ships++] = (Shipment){c->order, c->carrier, c->day};
        for (int k = 0; k < o->n_items; k++) s->stock[o->item_sku[k]] -= o->item_qty[k];
        if ((o = own(s, c->order)) == NULL) return OVERFLOW();
        release_reservations(s, o);
        o->status = S_SHIPPED;
        o->has_shipment = 1;
        break;
    case T_TICKET:
        if (s->n_tickets >= MAX_CREATED) return OVERFLOW();
        s->tickets[s->n_tickets++] = (Ticket){c->customer, c->linked, c->category, c->priority};
        s->last_order = -1;
        break;
    default:
        PyErr_SetString(PyExc_RuntimeError, "lean episode: not a write");
        return -1;
    }
    commit(s);
    return RES_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* grading: the grader's normalised comparison                                                    */
/* ---------------------------------------------------------------------------------------------- */
static int cmp_int(const void *a, const void *b) {
    long long x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}
static int cmp_pair(const void *a, const void *b) {
    const int32_t *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}
static int cmp_quad(const void *a, const void *b) {
    const int32_t *x = a, *y = b;
    for (int k = 0; k < 4; k++)
        if (x[k] != y[k]) return (x[k] > y[k]) - (x[k] < y[k]);
    return 0;
}

static int same_text(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    return PyUnicode_Compare(a, b) == 0;
}

/* Do two records normalise alike (grader._norm_order: refunds as sorted cents, reservations as sorted
 * (sku, units), a shipment as its presence)? Items, ids and days never change. */
static int same_order(const Order *a, const Order *b) {
    if (a == b) return 1;
    if (a->status != b->status || a->paid_before_cancel != b->paid_before_cancel ||
        a->has_shipment != b->has_shipment || a->n_refunds != b->n_refunds || a->n_res != b->n_res)
        return 0;
    if (!same_text(a->street, b->street) || !same_text(a->city, b->city) || !same_text(a->postal, b->postal))
        return 0;
    int32_t ra[MAX_REFUNDS], rb[MAX_REFUNDS];
    memcpy(ra, a->refunds, sizeof(int32_t) * a->n_refunds);
    memcpy(rb, b->refunds, sizeof(int32_t) * b->n_refunds);
    qsort(ra, a->n_refunds, sizeof(int32_t), cmp_int);
    qsort(rb, b->n_refunds, sizeof(int32_t), cmp_int);
    if (memcmp(ra, rb, sizeof(int32_t) * a->n_refunds)) return 0;
    int32_t pa[2 * MAX_RESERVATIONS], pb[2 * MAX_RESERVATIONS];
    for (int k = 0; k < a->n_res; k++) pa[2 * k] = a->res_sku[k], pa[2 * k + 1] = a->res_qty[k];
    for (int k = 0; k < b->n_res; k++) pb[2 * k] = b->res_sku[k], pb[2 * k + 1] = b->res_qty[k];
    qsort(pa, a->n_res, 2 * sizeof(int32_t), cmp_pair);
    qsort(pb, b->n_res, 2 * sizeof(int32_t), cmp_pair);
    return memcmp(pa, pb, 2 * sizeof(int32_t) * a->n_res) == 0;
}

static int same_state(const State *exp, const State *act) {
    const World *w = act->world;
    for (int i = 0; i < w->n_orders; i++)
        if (!same_order(exp->orders[i], act->orders[i])) return 0;
    if (memcmp(exp->stock, act->stock, sizeof(long long) * w->n_products)) return 0;
    if (exp->n_ships != act->n_ships || exp->n_tickets != act->n_tickets) return 0;
    int32_t a[4 * MAX_CREATED], b[4 * MAX_CREATED];
    for (int k = 0; k < act->n_ships; k++) {
        a[4 * k] = exp->ships[k].order, a[4 * k + 1] = exp->ships[k].carrier, a[4 * k + 2] = exp->ships[k].day;
        b[4 * k] = act->ships[k].order, b[4 * k + 1] = act->ships[k].carrier, b[4 * k + 2] = act->ships[k].day;
        a[4 * k + 3] = b[4 * k + 3] = 0;
    }
    qsort(a, act->n_ships, 4 * sizeof(int32_t), cmp_quad);
    qsort(b, act->n_ships, 4 * sizeof(int32_t), cmp_quad);
    if (memcmp(a, b, 4 * sizeof(int32_t) * act->n_ships)) return 0;
    for (int k = 0; k < act->n_tickets; k++) {
        const Ticket *x = &exp->tickets[k], *y = &act->tickets[k];
        a[4 * k] = x->customer, a[4 * k + 1] = x->order, a[4 * k + 2] = x->category, a[4 * k + 3] = x->priority;
        b[4 * k] = y->customer, b[4 * k + 1] = y->order, b[4 * k + 2] = y->category, b[4 * k + 3] = y->priority;
    }
    qsort(a, act->n_tickets, 4 * sizeof(int32_t), cmp_quad);
    qsort(b, act->n_tickets, 4 * sizeof(int32_t), cmp_quad);
    return memcmp(a, b, 4 * sizeof(int32_t) * act->n_tickets) == 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the task                                                                                       */
/* ---------------------------------------------------------------------------------------------- */
static void task_free(PyObject *capsule) {
    Task *t = PyCapsule_GetPointer(capsule, "lean_task");
    if (t == NULL) return;
    free(t->specs), free(t->plan_next), free(t->plan_wrong), free(t->plan_write), free(t->plan_unread);
    free(t->expected.copies);
    state_free(&t->expected);
    Py_XDECREF(t->refs);
    Py_XDECREF(t->world_capsule);
    free(t);
}

static PyObject *keep(Task *t, PyObject *obj) {
    if (obj == Py_None) return NULL;
    if (PyList_Append(t->refs, obj) < 0) return NULL;
    return obj;
}

/* task(world, specs, plan, oracle, n_keys): specs = ((tool, write, key, ok, name, event, order, sku,
 * customer, carrier, day, category, priority, linked, amount, qty, needed, offset, hits, street, city,
 * postal, raw_street, raw_city, raw_postal, read), ...); plan = ((next, wrong, write, unread), ...);
 * oracle = the spec of each oracle step, in order. None when the oracle plan does not replay. */
static PyObject *make_task(PyObject *module, PyObject *args) {
    PyObject *world_capsule, *specs_in, *plan_in, *oracle_in;
    int n_keys;
    if (!PyArg_ParseTuple(args, "OOOOi", &world_capsule, &specs_in, &plan_in, &oracle_in, &n_keys)) return NULL;
    World *w = PyCapsule_GetPointer(world_capsule, "lean_world");
    if (w == NULL) return NULL;
    Task *t = calloc(1, sizeof(Task));
    if (t == NULL) return PyErr_NoMemory();
    t->world = w;
    t->world_capsule = Py_NewRef(world_capsule);
    t->refs = PyList_New(0);
    t->n_keys = n_keys;
    PyObject *capsule = PyCapsule_New(t, "lean_task", task_free);
    if (capsule == NULL || t->refs == NULL) {
        Py_XDECREF(t->refs), Py_DECREF(world_capsule), free(t);
        return NULL;
    }
    PyObject *specs = fast(specs_in, -1, "specs"), *plan = fast(plan_in, -1, "plan"),
             *oracle = fast(oracle_in, -1, "oracle");
    if (specs == NULL || plan == NULL || oracle == NULL) goto fail;
    t->n_specs = (int)PySequence_Fast_GET_SIZE(specs);
    t->specs = calloc(t->n_specs ? t->n_specs : 1, sizeof(Spec));
    for (int j = 0; j < t->n_specs; j++) {
        PyObject *rec = fast(PySequence_Fast_GET_ITEM(specs, j), 26, "spec");
        if (rec == NULL) goto fail;
        Spec *c = &t->specs[j];
        long long v[19];
        int bad = 0;
        for (int k = 0; k < 19; k++) {
            if (k == 4 || k == 5) continue;
            if (get_int(rec, k, &v[k]) < 0) bad = 1;
        }
        if (!bad) {
            c->tool = (int)v[0], c->write = (int)v[1], c->key = (int)v[2], c->ok = (int)v[3];
            c->name = keep(t, PySequence_Fast_GET_ITEM(rec, 4));
            c->event = keep(t, PySequence_Fast_GET_ITEM(rec, 5));
            if (c->name != NULL && c->event != NULL) {
                c->name_utf8 = PyUnicode_AsUTF8AndSize(c->name, &c->name_len);
                c->event_utf8 = PyUnicode_AsUTF8AndSize(c->event, &c->event_len);
            }
            c->order = (int)v[6], c->sku = (int)v[7], c->customer = (int)v[8], c->carrier = (int)v[9];
            c->day = (int)v[10], c->category = (int)v[11], c->priority = (int)v[12], c->linked = (int)v[13];
            c->amount = v[14], c->qty = v[15], c->needed = v[16], c->offset = v[17], c->hits = v[18];
            c->street = keep(t, PySequence_Fast_GET_ITEM(rec, 19));
            c->city = keep(t, PySequence_Fast_GET_ITEM(rec, 20));
            c->postal = keep(t, PySequence_Fast_GET_ITEM(rec, 21));
            c->raw_street = keep(t, PySequence_Fast_GET_ITEM(rec, 22));
            c->raw_city = keep(t, PySequence_Fast_GET_ITEM(rec, 23));
            c->raw_postal = keep(t, PySequence_Fast_GET_ITEM(rec, 24));
            long long r = 0;
            if (get_int(rec, 25, &r) < 0) bad = 1;
            c->read = (int)r;
            if (PyErr_Occurred()) bad = 1;
            if (c->tool < 0 || c->tool >= N_TOOLS || c->key < 0 || c->key >= n_keys || c->read >= t->n_specs ||
                c->name == NULL || c->event == NULL || c->name_utf8 == NULL || c->event_utf8 == NULL)
                bad = 1;
            if (c->ok && c->tool != T_SEARCH && c->tool != T_TICKET && (c->order < 0 || c->order >= w->n_orders))
                bad = 1;
            if (c->ok && c->tool == T_RESERVE && (c->sku < 0 || c->sku >= w->n_products)) bad = 1;
            if (c->ok && c->tool == T_ADDRESS && (c->street == NULL || c->city == NULL || c->postal == NULL ||
                                                  c->raw_street == NULL || c->raw_city == NULL || c->raw_postal == NULL))
                bad = 1;
        }
        Py_DECREF(rec);
        if (bad) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed call spec");
            goto fail;
        }
    }
    t->n_plan = (int)PySequence_Fast_GET_SIZE(plan);
    int np = t->n_plan ? t->n_plan : 1;
    t->plan_next = calloc(np, sizeof(int)), t->plan_wrong = calloc(np, sizeof(int));
    t->plan_write = calloc(np, sizeof(int)), t->plan_unread = calloc(np, sizeof(int));
    for (int i = 0; i < t->n_plan; i++) {
        PyObject *rec = fast(PySequence_Fast_GET_ITEM(plan, i), 4, "plan step");
        long long a = 0, b = 0, c = 0, d = 0;
        if (rec == NULL || get_int(rec, 0, &a) < 0 || get_int(rec, 1, &b) < 0 || get_int(rec, 2, &c) < 0 ||
            get_int(rec, 3, &d) < 0) {
            Py_XDECREF(rec);
            goto fail;
        }
        Py_DECREF(rec);
        if (a < 0 || a >= t->n_specs || b >= t->n_specs) {
            PyErr_SetString(PyExc_ValueError, "malformed plan step");
            goto fail;
        }
        t->plan_next[i] = (int)a, t->plan_wrong[i] = (int)b, t->plan_write[i] = (int)c, t->plan_unread[i] = (int)d;
    }
    /* the expected state: the oracle steps on the initial world (grader.replay_plan) */
    Py_ssize_t n_oracle = PySequence_Fast_GET_SIZE(oracle);
    Order *copies = malloc(sizeof(Order) * MAX_COPIES);
    if (copies == NULL || state_init(&t->expected, w, copies) < 0) {
        free(copies);
        goto fail;
    }
    for (Py_ssize_t k = 0; k < n_oracle; k++) {
        long long j;
        if (get_int(oracle, k, &j) < 0) goto fail;
        if (j < 0 || j >= t->n_specs || t->specs[j].tool < T_ADDRESS) {
            PyErr_SetString(PyExc_ValueError, "an oracle step is not a write");
            goto fail;
        }
        int r = write_call(&t->expected, &t->specs[j]);
        if (r < 0) goto fail;
        if (r != RES_OK) { /* the oracle plan does not replay: the Python grader says why */
            Py_DECREF(specs), Py_DECREF(plan), Py_DECREF(oracle), Py_DECREF(capsule);
            Py_RETURN_NONE;
        }
    }
    /* keep only the copies used, pointers moved to them */
    int used = t->expected.n_copies;
    Order *kept = malloc(sizeof(Order) * (used ? used : 1));
    if (kept == NULL) goto fail;
    memcpy(kept, copies, sizeof(Order) * used);
    for (int i = 0; i < w->n_orders; i++)
        if (t->expected.orders[i] >= copies && t->expected.orders[i] < copies + MAX_COPIES)
            t->expected.orders[i] = kept + (t->expected.orders[i] - copies);
    free(copies);
    t->expected.copies = kept;
    t->expected.last_prev = NULL;
    Py_DECREF(specs), Py_DECREF(plan), Py_DECREF(oracle);
    return capsule;
fail:
    Py_XDECREF(specs), Py_XDECREF(plan), Py_XDECREF(oracle);
    Py_DECREF(capsule);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* the policy's table                                                                             */
/* ---------------------------------------------------------------------------------------------- */
static void table_free(PyObject *capsule) {
    Table *tb = PyCapsule_GetPointer(capsule, "lean_table");
    if (tb == NULL) return;
    for (int c = 0; c < N_CONTEXTS; c++) {
        Py_XDECREF(tb->ctx[c]);
        Py_XDECREF(tb->avail[c][0]);
        Py_XDECREF(tb->avail[c][1]);
    }
    free(tb);
}

static Table *new_table(PyObject **capsule) {
    Table *tb = calloc(1, sizeof(Table));
    if (tb == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *capsule = PyCapsule_New(tb, "lean_table", table_free);
    if (*capsule == NULL) {
        free(tb);
        return NULL;
    }
    return tb;
}

/* table(((ctx, ((avail, cdf, probs), (avail, cdf, probs))), ...)): per context in CONTEXTS order, its
 * name and the menu with every action and without NEXT, each with the policy's cumulative probabilities
 * and probabilities (None for a menu of one action): the policy's own, where table_of's differ. */
static PyObject *make_table(PyObject *module, PyObject *arg) {
    PyObject *rows = fast(arg, N_CONTEXTS, "table"), *capsule = NULL;
    if (rows == NULL) return NULL;
    Table *tb = new_table(&capsule);
    if (tb == NULL) {
        Py_DECREF(rows);
        return NULL;
    }
    for (int c = 0; c < N_CONTEXTS; c++) {
        PyObject *row = fast(PySequence_Fast_GET_ITEM(rows, c), 2, "table row");
        if (row == NULL) goto fail;
        tb->ctx[c] = Py_NewRef(PySequence_Fast_GET_ITEM(row, 0));
        PyObject *menus = fast(PySequence_Fast_GET_ITEM(row, 1), 2, "menus");
        Py_DECREF(row);
        if (menus == NULL) goto fail;
        for (int v = 0; v < 2; v++) {
            PyObject *menu = fast(PySequence_Fast_GET_ITEM(menus, v), 3, "menu");
            if (menu == NULL) {
                Py_DECREF(menus);
                goto fail;
            }
            PyObject *avail = PySequence_Fast_GET_ITEM(menu, 0);
            tb->avail[c][v] = Py_NewRef(avail);
            Py_ssize_t n = PyTuple_Check(avail) ? PyTuple_GET_SIZE(avail) : -1;
            int bad = n < 1 || n > 8;
            tb->n_avail[c][v] = (int)n;
            for (Py_ssize_t k = 0; !bad && k < n; k++) {
                long p = PyLong_AsLong(PyTuple_GET_ITEM(avail, k));
                if (p < 0 || p >= 8 || PyErr_Occurred()) bad = 1;
                tb->pos[c][v][k] = (int)p;
            }
            for (int which = 1; !bad && n > 1 && which <= 2; which++) {
                PyObject *cs = fast(PySequence_Fast_GET_ITEM(menu, which), n, "cdf");
                if (cs == NULL) bad = 1;
                for (Py_ssize_t k = 0; !bad && k < n; k++) {
                    double x = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(cs, k));
                    if (PyErr_Occurred()) bad = 1;
                    (which == 1 ? tb->cdf : tb->probs)[c][v][k] = x;
                }
                Py_XDECREF(cs);
            }
            Py_DECREF(menu);
            if (bad) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed menu");
                Py_DECREF(menus);
                goto fail;
            }
        }
        Py_DECREF(menus);
    }
    Py_DECREF(rows);
    return capsule;
fail:
    Py_DECREF(rows);
    Py_DECREF(capsule);
    return NULL;
}

/* table_of(theta): the menus of the policy with action parameters theta, as Policy.probabilities and
 * Policy.cdf compute them (the same operations in the same order: the largest logit subtracted, exp,
 * the weights summed left to right, each divided by the sum, the cumulative sum left to right). */
static PyObject *table_of(PyObject *module, PyObject *arg) {
    PyObject *theta_seq = fast(arg, N_PARAMETERS, "theta"), *capsule = NULL;
    if (theta_seq == NULL) return NULL;
    double theta[MAX_PARAMETERS];
    for (int i = 0; i < N_PARAMETERS; i++) {
        theta[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(theta_seq, i));
        if (theta[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(theta_seq);
            return NULL;
        }
    }
    Py_DECREF(theta_seq);
    Table *tb = new_table(&capsule);
    if (tb == NULL) return NULL;
    for (int c = 0; c < N_CONTEXTS; c++) {
        tb->ctx[c] = Py_NewRef(SETUP_CTX[c]);
        for (int v = 0; v < 2; v++) {
            PyObject *avail = SETUP_AVAIL[c][v];
            tb->avail[c][v] = Py_NewRef(avail);
            int n = (int)PyTuple_GET_SIZE(avail);
            tb->n_avail[c][v] = n;
            double logits[8], weights[8], top = 0.0, total = 0.0, acc = 0.0;
            for (int k = 0; k < n; k++) {
                int pos = (int)PyLong_AsLong(PyTuple_GET_ITEM(avail, k));
                tb->pos[c][v][k] = pos;
                int i = PARAM_OF[c][pos];
                logits[k] = i < 0 ? 0.0 : theta[i];
                if (k == 0 || logits[k] > top) top = logits[k];
            }
            for (int k = 0; k < n; k++) weights[k] = exp(logits[k] - top);
            for (int k = 0; k < n; k++) total += weights[k];
            for (int k = 0; k < n; k++) {
                tb->probs[c][v][k] = weights[k] / total;
                acc += tb->probs[c][v][k];
                tb->cdf[c][v][k] = acc;
            }
        }
    }
    return capsule;
}

/* menus(table) -> per context (name, ((avail, cdf, probs), ...)): a compiled table read back (tests and
 * the agreement check of table_of). */
static PyObject *menus_of(PyObject *module, PyObject *capsule) {
    Table *tb = PyCapsule_GetPointer(capsule, "lean_table");
    if (tb == NULL) return NULL;
    PyObject *out = PyTuple_New(N_CONTEXTS);
    for (int c = 0; out != NULL && c < N_CONTEXTS; c++) {
        PyObject *both = PyTuple_New(2);
        for (int v = 0; both != NULL && v < 2; v++) {
            int n = tb->n_avail[c][v];
            PyObject *cdf = PyTuple_New(n), *probs = PyTuple_New(n);
            for (int k = 0; cdf != NULL && probs != NULL && k < n; k++) {
                PyTuple_SET_ITEM(cdf, k, PyFloat_FromDouble(n > 1 ? tb->cdf[c][v][k] : 0.0));
                PyTuple_SET_ITEM(probs, k, PyFloat_FromDouble(n > 1 ? tb->probs[c][v][k] : 0.0));
            }
            PyObject *menu = (cdf && probs) ? PyTuple_Pack(3, tb->avail[c][v], cdf, probs) : NULL;
            Py_XDECREF(cdf), Py_XDECREF(probs);
            if (menu == NULL) Py_CLEAR(both);
            else PyTuple_SET_ITEM(both, v, menu);
        }
        PyObject *row = both ? PyTuple_Pack(2, tb->ctx[c], both) : NULL;
        Py_XDECREF(both);
        if (row == NULL) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, c, row);
    }
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* fates                                                                                          */
/* ---------------------------------------------------------------------------------------------- */
static int fate_kind(PyObject *kind) {
    if (!PyUnicode_Check(kind)) return -1;
    if (PyUnicode_CompareWithASCIIString(kind, "transient") == 0) return F_TRANSIENT;
    if (PyUnicode_CompareWithASCIIString(kind, "outage") == 0) return F_OUTAGE;
    if (PyUnicode_CompareWithASCIIString(kind, "rate_limit") == 0) return F_RATE_LIMIT;
    if (PyUnicode_CompareWithASCIIString(kind, "stale") == 0) return F_STALE;
    if (PyUnicode_CompareWithASCIIString(kind, "field_dropout") == 0) return F_FIELD_DROPOUT;
    if (PyUnicode_CompareWithASCIIString(kind, "truncate") == 0) return F_TRUNCATE;
    if (PyUnicode_CompareWithASCIIString(kind, "timeout_after_commit") == 0) return F_TIMEOUT;
    return -1;
}

static void faults_free(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, "lean_faults")); }

/* faults(rows, challenge): per tool of TOOLS, None (it never faults) or (rate, cumulative weights,
 * fault types) of its FaultTable; challenge: the writes-once challenge (a transient first write). */
static PyObject *make_faults(PyObject *module, PyObject *args) {
    PyObject *rows_in;
    int challenge;
    if (!PyArg_ParseTuple(args, "Op", &rows_in, &challenge)) return NULL;
    PyObject *rows = fast(rows_in, N_TOOLS, "fault tables");
    if (rows == NULL) return NULL;
    Faults *f = calloc(1, sizeof(Faults));
    PyObject *capsule = f == NULL ? NULL : PyCapsule_New(f, "lean_faults", faults_free);
    if (capsule == NULL) {
        free(f);
        Py_DECREF(rows);
        return f == NULL ? PyErr_NoMemory() : NULL;
    }
    f->challenge = challenge;
    for (int t = 0; t < N_TOOLS; t++) {
        PyObject *row = PySequence_Fast_GET_ITEM(rows, t);
        if (row == Py_None) continue;
        PyObject *table = fast(row, 3, "fault table");
        if (table == NULL) goto fail;
        PyObject *cum = fast(PySequence_Fast_GET_ITEM(table, 1), -1, "cumulative weights");
        PyObject *kinds = cum == NULL ? NULL : fast(PySequence_Fast_GET_ITEM(table, 2), -1, "fault types");
        int bad = cum == NULL || kinds == NULL;
        Py_ssize_t n = bad ? 0 : PySequence_Fast_GET_SIZE(cum);
        if (!bad && (n < 1 || n > 8 || PySequence_Fast_GET_SIZE(kinds) != n)) bad = 1;
        f->present[t] = 1;
        f->n_types[t] = (int)n;
        f->rate[t] = bad ? 0.0 : PyFloat_AsDouble(PySequence_Fast_GET_ITEM(table, 0));
        for (Py_ssize_t k = 0; !bad && k < n; k++) {
            f->cum[t][k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(cum, k));
            f->kinds[t][k] = fate_kind(PySequence_Fast_GET_ITEM(kinds, k));
            if (f->kinds[t][k] < 0) bad = 1;
        }
        if (PyErr_Occurred()) bad = 1;
        Py_XDECREF(cum), Py_XDECREF(kinds), Py_DECREF(table);
        if (bad) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed fault table");
            goto fail;
        }
    }
    Py_DECREF(rows);
    return capsule;
fail:
    Py_DECREF(rows);
    Py_DECREF(capsule);
    return NULL;
}

static int is_write_tool(int tool) { return tool >= T_ADDRESS; }

/* The fate of the k-th call of a spec's (tool, event) under a schedule: noise/schedule.py's
 * NoiseSchedule.fate through pairing/dice.py's Dice.fate, computed here: SHA-256 over
 * "{seed}|event|{tool}|{event}|{k}", the draws of Random(first 8 bytes), the type bisected on the table's
 * cumulative weights. 1 with the fate set, 0 for none, 2 when the schedule must be asked (a key longer
 * than the buffer, or draws past the lazy twist). */
static int event_seed(const char *prefix, Py_ssize_t prefix_len, const Spec *c, int k, unsigned long long *n) {
    char text[512];
    char digits[24];
    int n_digits = snprintf(digits, sizeof(digits), "%d", k);
    Py_ssize_t length = prefix_len + c->name_len + 1 + c->event_len + 1 + n_digits;
    if (length > (Py_ssize_t)sizeof(text)) return 2;
    char *at = text;
    memcpy(at, prefix, prefix_len), at += prefix_len;
    memcpy(at, c->name_utf8, c->name_len), at += c->name_len;
    *at++ = '|';
    memcpy(at, c->event_utf8, c->event_len), at += c->event_len;
    *at++ = '|';
    memcpy(at, digits, n_digits);
    *n = sha256_first_u64((const uint8_t *)text, (size_t)length);
    return 0;
}

/* The fate of a fault draw: the type bisected on the tool's cumulative weights, the retry-after chosen. */
static void fault_of(const Faults *f, int tool, uint32_t retry_index, uint32_t dropped, double type_draw, int *kind,
                     long long *retry, long long *detail) {
    const double *cum = f->cum[tool];
    int m = f->n_types[tool], j = 0;
    double x = type_draw * (cum[m - 1] + 0.0);
    while (j < m - 1 && !(x < cum[j])) j++; /* bisect(cum, x, 0, m - 1) */
    *kind = f->kinds[tool][j], *retry = RETRY_AFTER[retry_index], *detail = dropped;
}

/* A tool with no fault table: none, or the writes-once challenge's transient first write. */
static int tableless_fate(const Faults *f, const Spec *c, int k, int *kind, long long *retry, long long *detail) {
    if (f->challenge && k == 0 && is_write_tool(c->tool)) {
        *kind = F_TRANSIENT, *retry = 30, *detail = 0;
        return 1;
    }
    return 0;
}

static int compiled_fate(const Faults *f, const char *prefix, Py_ssize_t prefix_len, const Spec *c, int k,
                         int *kind, long long *retry, long long *detail) {
    if (!f->present[c->tool]) return tableless_fate(f, c, k, kind, retry, detail);
    unsigned long long n;
    if (event_seed(prefix, prefix_len, c, k, &n)) return 2;
    uint32_t retry_index, dropped;
    double type_draw;
    int drawn = fate_draws(n, f->rate[c->tool], &retry_index, &dropped, &type_draw);
    if (drawn <= 0) return drawn == 0 ? 0 : 2;
    fault_of(f, c->tool, retry_index, dropped, type_draw, kind, retry, detail);
    return 1;
}

/* fate(faults, prefix, tool, event, k) -> None or (kind, retry_after, detail), or NotImplemented where
 * the schedule must be asked: the compiled fate on its own, for surrogate/lean.py's check and tests. */
static PyObject *fate_of(PyObject *module, PyObject *args) {
    PyObject *capsule, *prefix_obj, *event;
    int tool, k;
    if (!PyArg_ParseTuple(args, "OUiUi", &capsule, &prefix_obj, &tool, &event, &k)) return NULL;
    const Faults *f = PyCapsule_GetPointer(capsule, "lean_faults");
    if (f == NULL) return NULL;
    if (tool < 0 || tool >= N_TOOLS || k < 0) {
        PyErr_SetString(PyExc_ValueError, "fate: no such tool or repeat");
        return NULL;
    }
    static const char *KINDS[] = {"", "transient", "outage", "rate_limit", "stale", "field_dropout", "truncate",
                                  "timeout_after_commit"};
    Spec c;
    memset(&c, 0, sizeof(Spec));
    c.tool = tool;
    c.name_utf8 = NAMES[tool];
    c.name_len = (Py_ssize_t)strlen(NAMES[tool]);
    c.event_utf8 = PyUnicode_AsUTF8AndSize(event, &c.event_len);
    Py_ssize_t prefix_len;
    const char *prefix = PyUnicode_AsUTF8AndSize(prefix_obj, &prefix_len);
    if (c.event_utf8 == NULL || prefix == NULL) return NULL;
    int kind;
    long long retry, detail;
    int r = compiled_fate(f, prefix, prefix_len, &c, k, &kind, &retry, &detail);
    if (r == 0) Py_RETURN_NONE;
    if (r == 2) Py_RETURN_NOTIMPLEMENTED;
    return Py_BuildValue("(sLL)", KINDS[kind], retry, detail);
}

/* ---------------------------------------------------------------------------------------------- */
/* the episode                                                                                    */
/* ---------------------------------------------------------------------------------------------- */
typedef struct {
    Task *task;
    State st;
    PyObject *fate; /* schedule.fate, or NULL when clean */
    const Faults *faults; /* the compiled fates (NULL: ask ``fate``) */
    const char *prefix;   /* "{seed}|event|" */
    Py_ssize_t prefix_len;
    long long clock, rate_limited_until, budget, calls;
    int finished, budget_exceeded, exposed;
    int *repeats;
    char *outage;
    PyObject *trace; /* the calls that reached the API, for a full record (NULL: not kept) */
    const int *plan_at; /* the menu's next planned call (the fates worth drawing ahead) */
    int n_known;
    struct {
        int key, k, found, kind;
        long long retry, detail;
    } known[FATE_CACHE]; /* fates drawn, by (event key, repeat) */
} Episode;

/* Episode's fates of this call's and the next planned calls' events, drawn FATE_LANES at a time
 * (seeded_states): a fate is a pure function of (schedule, tool, event, k), so one drawn ahead and
 * never met changes nothing; a plan's next calls usually come next, with the repeat index they will
 * have if nothing is retried first. Same results as compiled_fate, one event at a time. */
static int batched_fate(Episode *e, const Spec *c, int k, int *kind, long long *retry, long long *detail) {
    const Faults *f = e->faults;
    if (!f->present[c->tool]) return tableless_fate(f, c, k, kind, retry, detail);
    for (int j = 0; j < e->n_known; j++)
        if (e->known[j].key == c->key && e->known[j].k == k) {
            *kind = e->known[j].kind, *retry = e->known[j].retry, *detail = e->known[j].detail;
            return e->known[j].found;
        }
    const Spec *member[FATE_LANES] = {c};
    int member_k[FATE_LANES] = {k}, members = 1;
    unsigned long long seed[FATE_LANES];
    if (event_seed(e->prefix, e->prefix_len, c, k, &seed[0])) return 2;
    const Task *t = e->task;
    for (int j = *e->plan_at; j < t->n_plan && members < FATE_LANES; j++) {
        const Spec *s = &t->specs[t->plan_next[j]];
        if (!f->present[s->tool]) continue;
        int ahead = e->repeats[s->key], seen = 0;
        for (int m = 1; m < members; m++) ahead += member[m]->key == s->key;
        for (int m = 0; m < members; m++) seen |= member[m]->key == s->key && member_k[m] == ahead;
        for (int m = 0; m < e->n_known && !seen; m++) seen |= e->known[m].key == s->key && e->known[m].k == ahead;
        if (seen || event_seed(e->prefix, e->prefix_len, s, ahead, &seed[members])) continue;
        member[members] = s, member_k[members++] = ahead;
    }
    uint32_t keys[FATE_LANES][2], mt[FATE_LANES][N];
    int key_length[FATE_LANES];
    for (int m = 0; m < FATE_LANES; m++) key_length[m] = key_of(seed[m < members ? m : 0], keys[m]);
    seeded_states(mt, keys, key_length);
    int result = 2;
    for (int m = 0; m < members; m++) {
        uint32_t retry_index = 0, dropped = 0;
        double type_draw = 0.0;
        int drawn = fate_draws_of_state(mt[m], f->rate[member[m]->tool], &retry_index, &dropped, &type_draw);
        if (drawn < 0) continue; /* past the lazy twist: the schedule draws it */
        int fk = F_NONE;
        long long fr = 0, fd = 0;
        if (drawn) fault_of(f, member[m]->tool, retry_index, dropped, type_draw, &fk, &fr, &fd);
        if (m == 0) *kind = fk, *retry = fr, *detail = fd, result = drawn;
        if (e->n_known >= FATE_CACHE) e->n_known = 0;
        e->known[e->n_known].key = member[m]->key, e->known[e->n_known].k = member_k[m];
        e->known[e->n_known].found = drawn, e->known[e->n_known].kind = fk;
        e->known[e->n_known].retry = fr, e->known[e->n_known].detail = fd;
        e->n_known++;
    }
    return result;
}

typedef struct {
    int code;
    long long retry_after;   /* RES_RATE_LIMITED */
    long long next_offset;   /* a truncated page's (-1: none, or not truncated) */
    int truncated;
    const Order *view;       /* a get_order success: the record read */
    int dropped;             /* its dropped field (-1: none) */
    int k, logged;           /* the repeat index, and the fault the call log records (TRACE_*) */
} Result;

/* the faults a call log records, as surrogate/lean.py TRACE_FAULTS names them */
enum {
    TRACE_NONE, TRACE_TRANSIENT, TRACE_OUTAGE, TRACE_RATE_LIMIT, TRACE_STALE, TRACE_FIELD_DROPOUT,
    TRACE_TRUNCATE, TRACE_TIMEOUT, TRACE_RATE_LIMIT_ONGOING, TRACE_OUTAGE_ONGOING
};


/* A read or a write executed on the state (``ToolAPI.execute``); ``stale``: reads see the state before
 * the last commit. */
static int execute(Episode *e, const Spec *c, long long offset, int stale, Result *out) {
    if (c->tool == T_SEARCH) {
        if (!c->ok || offset < 0) {
            out->code = RES_ERROR;
            return 0;
        }
        long long on_page = c->hits - offset;
        on_page = on_page < 0 ? 0 : (on_page > 5 ? 5 : on_page);
        out->code = RES_OK;
        out->next_offset = offset + (on_page < 2 ? on_page : 2); /* what a truncation would leave */
        if (out->next_offset >= c->hits) out->next_offset = -1;
        return 0;
    }
    if (c->tool == T_GET_ORDER) {
        if (!c->ok) {
            out->code = RES_ERROR;
            return 0;
        }
        const Order *o = e->st.orders[c->order];
        if (stale && e->st.last_order == c->order && e->st.last_prev != NULL) o = e->st.last_prev;
        out->code = RES_OK;
        out->view = o;
        return 0;
    }
    int r = write_call(&e->st, c);
    if (r < 0) return -1;
    out->code = r;
    return 0;
}

/* One counted call through ``EpisodeSession.invoke`` and ``NoisyToolAPI.invoke``. */
static int call_api(Episode *e, const Spec *c, long long offset, Result *out) {
    memset(out, 0, sizeof(Result));
    out->next_offset = -1;
    out->dropped = -1;
    if (!e->finished) {
        e->calls++;
        if (e->calls > e->budget) {
            e->budget_exceeded = 1;
            e->finished = 1;
            out->code = RES_BUDGET;
            return 0;
        }
    }
    if (e->fate == NULL) return execute(e, c, offset, 0, out);
    int k = out->k = e->repeats[c->key]++;
    if (e->clock < e->rate_limited_until) {
        e->exposed = 1;
        out->logged = TRACE_RATE_LIMIT_ONGOING;
        out->code = RES_RATE_LIMITED;
        out->retry_after = e->rate_limited_until - e->clock;
        return 0;
    }
    if (e->outage[c->key]) {
        e->exposed = 1;
        out->logged = TRACE_OUTAGE_ONGOING;
        out->code = RES_UNAVAILABLE;
        return 0;
    }
    int kind = F_NONE, found = 2;
    long long retry = 0, detail = 0;
    if (e->faults != NULL) found = batched_fate(e, c, k, &kind, &retry, &detail);
    if (found == 0) return execute(e, c, offset, 0, out);
    if (found == 2) { /* the schedule's own fate */
        PyObject *argv[3] = {c->name, c->event, k < 16 ? Py_NewRef(SMALL_INTS[k]) : PyLong_FromLong(k)};
        if (argv[2] == NULL) return -1;
        PyObject *fate = PyObject_Vectorcall(e->fate, argv, 3, NULL);
        Py_DECREF(argv[2]);
        if (fate == NULL) return -1;
        if (fate == Py_None) {
            Py_DECREF(fate);
            return execute(e, c, offset, 0, out);
        }
        kind = -1;
        if (PyTuple_Check(fate) && PyTuple_GET_SIZE(fate) == 3) {
            kind = fate_kind(PyTuple_GET_ITEM(fate, 0));
            retry = PyLong_AsLongLong(PyTuple_GET_ITEM(fate, 1));
            detail = PyLong_AsLongLong(PyTuple_GET_ITEM(fate, 2));
        }
        Py_DECREF(fate);
        if (PyErr_Occurred()) return -1;
    }
    int is_read = c->tool == T_SEARCH || c->tool == T_GET_ORDER;
    int fits = kind == F_TRANSIENT || kind == F_OUTAGE || kind == F_RATE_LIMIT ||
               (is_read && (kind == F_STALE || kind == F_FIELD_DROPOUT)) || (c->tool == T_SEARCH && kind == F_TRUNCATE) ||
               (!is_read && c->tool != T_TICKET && kind == F_TIMEOUT);
    if (!fits) {
        PyErr_SetString(PyExc_RuntimeError, "lean episode: a fate the tool cannot meet");
        return -1;
    }
    switch (kind) {
    case F_TRANSIENT:
        e->exposed = 1;
        out->logged = TRACE_TRANSIENT;
        out->code = RES_UNAVAILABLE;
        return 0;
    case F_OUTAGE:
        e->outage[c->key] = 1;
        e->exposed = 1;
        out->logged = TRACE_OUTAGE;
        out->code = RES_UNAVAILABLE;
        return 0;
    case F_RATE_LIMIT:
        e->rate_limited_until = e->clock + retry;
        e->exposed = 1;
        out->logged = TRACE_RATE_LIMIT;
        out->code = RES_RATE_LIMITED;
        out->retry_after = retry;
        return 0;
    case F_STALE:
        if (e->st.version >= 1) {
            e->exposed = 1; /* logged whatever the read returns */
            out->logged = TRACE_STALE;
            return execute(e, c, offset, 1, out);
        }
        return execute(e, c, offset, 0, out);
    default:
        break;
    }
    if (execute(e, c, offset, 0, out) < 0) return -1;
    if (out->code != RES_OK) return 0;
    e->exposed = 1;
    if (kind == F_TRUNCATE) out->truncated = 1, out->logged = TRACE_TRUNCATE;
    else if (kind == F_TIMEOUT) out->code = RES_TIMEOUT, out->logged = TRACE_TIMEOUT;
    else if (kind == F_FIELD_DROPOUT) {
        out->dropped = (int)(detail % (c->tool == T_GET_ORDER ? ORDER_VIEW_KEYS : 4));
        out->logged = TRACE_FIELD_DROPOUT;
    }
    return 0;
}

/* A trace entry: (spec, page offset (-1: the call's own arguments), logged fault, repeat index);
 * spec -1 is a wait (the offset its seconds), -2 the closing finish. */
static int trace(Episode *e, int spec, long long offset, int logged, int k) {
    if (e->trace == NULL) return 0;
    PyObject *entry = Py_BuildValue("(iLii)", spec, offset, logged, k);
    if (entry == NULL) return -1;
    int r = PyList_Append(e->trace, entry);
    Py_DECREF(entry);
    return r;
}

/* One counted call through ``EpisodeSession.invoke`` and ``NoisyToolAPI.invoke``; ``page``: a page of
 * the call (its arguments with ``offset``). Traced when it reached the API. */
static int call(Episode *e, const Spec *c, long long offset, int page, Result *out) {
    if (call_api(e, c, offset, out) < 0) return -1;
    if (out->code == RES_BUDGET) return 0;
    return trace(e, (int)(c - e->task->specs), page ? offset : -1, out->logged, out->k);
}

/* agents/scripted.py ``_verified`` on a get_order view: 1 settled yes, 0 no or undecidable. */
static int verified(const Spec *p, const Result *r, long long before) {
    const Order *o = r->view;
    switch (p->tool) {
    case T_ADDRESS:
        if (r->dropped == KEY_SHIPPING_ADDRESS) return 0;
        return same_text(o->street, p->raw_street) && same_text(o->city, p->raw_city) &&
               same_text(o->postal, p->raw_postal);
    case T_CANCEL:
    case T_SHIP:
        if (r->dropped == KEY_STATUS) return 0;
        return o->status == (p->tool == T_CANCEL ? S_CANCELLED : S_SHIPPED);
    case T_REFUND:
        if (r->dropped == KEY_REFUNDED_CENTS) return 0;
        return refunded_of(o) >= before + p->amount;
    case T_RESERVE:
        if (r->dropped == KEY_RESERVATIONS) return 0;
        return (p->sku >= 0 ? reserved_on(o, p->sku) : 0) >= before + p->qty;
    default:
        return 0;
    }
}

/* play(task, table, rng_random, fates, budget, forced, trace) -> (decisions, success, calls,
 * budget_exceeded, exposed, score); trace: None, or a list the calls that reached the API are appended
 * to (``trace`` above) for the full record: fates is None (clean), the schedule's ``fate``, or (faults, "{seed}|event|", the
 * schedule's ``fate``) to compute the fates here; score is the episode's exact action score
 * (policy.score: per decision with a choice, minus each available action's probability, then plus one
 * for the chosen one), as the bytes of N_PARAMETERS doubles. */
static PyObject *play(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "play(task, table, rng_random, fates, budget, forced, trace)");
        return NULL;
    }
    Task *t = PyCapsule_GetPointer(args[0], "lean_task");
    Table *tb = PyCapsule_GetPointer(args[1], "lean_table");
    if (t == NULL || tb == NULL) return NULL;
    PyObject *rng = args[2], *forced = args[5];
    long long budget = PyLong_AsLongLong(args[4]);
    if (budget == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_Check(forced)) {
        PyErr_SetString(PyExc_TypeError, "forced must be a list");
        return NULL;
    }
    Episode e;
    memset(&e, 0, sizeof(Episode));
    e.task = t;
    if (PyTuple_Check(args[3])) {
        if (PyTuple_GET_SIZE(args[3]) != 3) {
            PyErr_SetString(PyExc_TypeError, "fates: (faults, prefix, fate)");
            return NULL;
        }
        e.faults = PyCapsule_GetPointer(PyTuple_GET_ITEM(args[3], 0), "lean_faults");
        e.prefix = e.faults == NULL ? NULL : PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(args[3], 1), &e.prefix_len);
        if (e.prefix == NULL) return NULL;
        e.fate = PyTuple_GET_ITEM(args[3], 2);
    } else {
        e.fate = args[3] == Py_None ? NULL : args[3];
    }
    e.budget = budget;
    if (args[6] != Py_None && !PyList_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "trace must be a list or None");
        return NULL;
    }
    e.trace = args[6] == Py_None ? NULL : args[6];
    Order *copies = PyMem_Malloc(sizeof(Order) * MAX_COPIES);
    e.repeats = PyMem_Calloc(t->n_keys ? t->n_keys : 1, sizeof(int));
    e.outage = PyMem_Calloc(t->n_keys ? t->n_keys : 1, 1);
    char *read_orders = PyMem_Calloc(t->world->n_orders ? t->world->n_orders : 1, 1);
    PyObject *decisions = PyList_New(0);
    PyObject *result = NULL;
    if (copies == NULL || e.repeats == NULL || e.outage == NULL || read_orders == NULL || decisions == NULL ||
        state_init(&e.st, t->world, copies) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        PyMem_Free(copies), PyMem_Free(e.repeats), PyMem_Free(e.outage), PyMem_Free(read_orders);
        Py_XDECREF(decisions);
        return NULL;
    }
    const int n_plan = t->n_plan;
    Py_ssize_t n_forced = PyList_GET_SIZE(forced), used_forced = 0;
    int i = 0, pending = -1, ctx;
    e.plan_at = &i;
    long long retry_after = 30, next_offset = -1, before = 0;
    double score[MAX_PARAMETERS] = {0.0};
    Result r;

#define PROCEED_CONTEXT()                                                                              \
    (i >= n_plan ? C_DONE                                                                              \
                 : (!t->plan_write[i] ? C_NEXT_READ                                                    \
                                      : (t->plan_unread[i] == -2                                       \
                                             ? C_NEXT_WRITE                                            \
                                             : (t->plan_unread[i] == -3 || !read_orders[t->plan_unread[i]] \
                                                    ? C_NEXT_WRITE_UNREAD                              \
                                                    : C_NEXT_WRITE))))
#define CHECKED(expr)                                                                                  \
    if ((expr) < 0) goto done

    ctx = PROCEED_CONTEXT();
    for (int turn = 0; turn < MAX_TURNS; turn++) {
        if (ctx == C_DONE || ctx == C_OVER || e.finished) break;
        int proceeding = ctx == C_NEXT_READ || ctx == C_NEXT_WRITE || ctx == C_NEXT_WRITE_UNREAD;
        int v = (i >= n_plan && !proceeding) ? 1 : 0;
        int n = tb->n_avail[ctx][v], chosen;
        if (used_forced < n_forced) {
            chosen = (int)PyLong_AsLong(PyList_GET_ITEM(forced, used_forced++));
            if (chosen == -1 && PyErr_Occurred()) goto done;
        } else if (n == 1) {
            chosen = tb->pos[ctx][v][0];
        } else {
            PyObject *u_obj = PyObject_CallNoArgs(rng);
            if (u_obj == NULL) goto done;
            double u = PyFloat_AsDouble(u_obj);
            Py_DECREF(u_obj);
            if (u == -1.0 && PyErr_Occurred()) goto done;
            int k = 0; /* bisect_right: the first cumulative probability above u */
            while (k < n && !(u < tb->cdf[ctx][v][k])) k++;
            chosen = tb->pos[ctx][v][k < n ? k : n - 1];
        }
        if (chosen < 0 || chosen >= 8) {
            PyErr_SetString(PyExc_ValueError, "a forced choice out of the menu");
            goto done;
        }
        if (n > 1) { /* policy.score's terms, in menu order */
            for (int k = 0; k < n; k++) {
                int param = PARAM_OF[ctx][tb->pos[ctx][v][k]];
                if (param >= 0) score[param] -= tb->probs[ctx][v][k];
            }
            if (PARAM_OF[ctx][chosen] >= 0) score[PARAM_OF[ctx][chosen]] += 1.0;
        }
        PyObject *decision = PyTuple_Pack(3, tb->ctx[ctx], tb->avail[ctx][v], SMALL_INTS[chosen]);
        if (decision == NULL || PyList_Append(decisions, decision) < 0) {
            Py_XDECREF(decision);
            goto done;
        }
        Py_DECREF(decision);
        int action = ACTION_OF[ctx][chosen];
        if (action == A_FINISH) break;
        if (action == A_PROCEED || (action == A_NEXT && !proceeding)) {
            pending = -1;
            ctx = PROCEED_CONTEXT();
            continue;
        }
        const Spec *c;
        long long offset;
        switch (action) {
        case A_NEXT:
        case A_WRONG: {
            int planned = i++;
            pending = action == A_NEXT ? t->plan_next[planned] : t->plan_wrong[planned];
            if (pending < 0) {
                PyErr_SetString(PyExc_RuntimeError, "lean episode: no wrong call for a read");
                goto done;
            }
            c = &t->specs[pending];
            if (c->write) {
                before = 0;
                if (c->order >= 0 && c->order < t->world->n_orders) {
                    const Order *o = e.st.orders[c->order];
                    if (c->tool == T_REFUND) before = refunded_of(o);
                    else if (c->tool == T_RESERVE && c->sku >= 0) before = reserved_on(o, c->sku);
                }
            }
            offset = c->offset;
            goto observe_call;
        }
        case A_SKIP:
            i++;
            ctx = PROCEED_CONTEXT();
            continue;
        case A_RETRY:
            if (pending < 0) {
                PyErr_SetString(PyExc_RuntimeError, "lean episode: retry without a call");
                goto done;
            }
            c = &t->specs[pending];
            offset = c->offset;
            goto observe_call;
        case A_WAIT:
            if (!e.finished) {
                e.calls++;
                if (e.calls > e.budget) {
                    e.budget_exceeded = 1;
                    e.finished = 1;
                }
            }
            if (!e.finished) {
                if (retry_after >= 1 && retry_after <= 600) e.clock += retry_after;
                CHECKED(trace(&e, -1, retry_after, 0, 0));
            }
            ctx = C_WAITED;
            continue;
        case A_PAGE:
            if (pending < 0 || t->specs[pending].tool != T_SEARCH) {
                PyErr_SetString(PyExc_RuntimeError, "lean episode: a page of no list");
                goto done;
            }
            c = &t->specs[pending];
            offset = next_offset;
            {
                /* observe(page, ...): a page is a read */
                CHECKED(call(&e, c, offset, 1, &r));
                goto observed_read;
            }
        case A_REREAD: {
            int g = pending >= 0 ? t->specs[pending].read : -1;
            if (g < 0) {
                ctx = PROCEED_CONTEXT();
                continue;
            }
            CHECKED(call(&e, &t->specs[g], t->specs[g].offset, 0, &r));
            ctx = r.code == RES_BUDGET ? C_OVER : PROCEED_CONTEXT();
            continue;
        }
        case A_CHECK: {
            int g = pending >= 0 ? t->specs[pending].read : -1;
            if (g < 0) { /* '{"error":{}}': no code, and no field to verify */
                ctx = C_UNVERIFIED;
                continue;
            }
            CHECKED(call(&e, &t->specs[g], t->specs[g].offset, 0, &r));
            if (r.code == RES_BUDGET) {
                ctx = C_OVER;
                continue;
            }
            int ok = r.code == RES_OK && verified(&t->specs[pending], &r, before);
            ctx = ok ? (i < n_plan ? C_AFTER_WRITE : C_AFTER_LAST_WRITE) : C_UNVERIFIED;
            continue;
        }
        default:
            PyErr_SetString(PyExc_RuntimeError, "lean episode: unknown action");
            goto done;
        }
    observe_call:
        CHECKED(call(&e, c, offset, 0, &r));
        if (c->write) {
            switch (r.code) {
            case RES_OK: ctx = i < n_plan ? C_AFTER_WRITE : C_AFTER_LAST_WRITE; break;
            case RES_UNAVAILABLE: ctx = C_UNAVAILABLE_WRITE; break;
            case RES_RATE_LIMITED: retry_after = r.retry_after, ctx = C_RATE_WRITE; break;
            case RES_TIMEOUT: ctx = C_TIMEOUT; break;
            case RES_BUDGET: ctx = C_OVER; break;
            default: ctx = C_ERROR;
            }
            continue;
        }
    observed_read:
        switch (r.code) {
        case RES_OK:
            if (c->tool == T_GET_ORDER) read_orders[c->order] = 1;
            if (r.truncated) {
                next_offset = r.next_offset;
                if (next_offset >= 0) {
                    ctx = C_TRUNCATED;
                    break;
                }
            }
            ctx = PROCEED_CONTEXT();
            break;
        case RES_UNAVAILABLE: ctx = C_UNAVAILABLE_READ; break;
        case RES_RATE_LIMITED: retry_after = r.retry_after, ctx = C_RATE_READ; break;
        case RES_TIMEOUT: ctx = C_TIMEOUT; break;
        case RES_BUDGET: ctx = C_OVER; break;
        default: ctx = C_ERROR;
        }
    }
    /* the end: ``finish`` if the episode has not ended, then grade */
    if (!e.finished) CHECKED(trace(&e, -2, -1, 0, 0));
    e.finished = 1;
    {
        int success = same_state(&t->expected, &e.st);
        result = Py_BuildValue("(NOLOOy#)", Py_NewRef(decisions), success ? Py_True : Py_False, e.calls,
                               e.budget_exceeded ? Py_True : Py_False, e.exposed ? Py_True : Py_False,
                               (const char *)score, (Py_ssize_t)(sizeof(double) * N_PARAMETERS));
    }
done:
    state_free(&e.st);
    PyMem_Free(copies), PyMem_Free(e.repeats), PyMem_Free(e.outage), PyMem_Free(read_orders);
    Py_DECREF(decisions);
    return result;
#undef PROCEED_CONTEXT
#undef CHECKED
}

/* setup(menus, n_parameters, max_turns, tools): per context in CONTEXTS order, (name, action codes,
 * parameter per position (-1: the reference), the menu with every action, the menu without NEXT); tools
 * must name the tool enum in its order. */
static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *menus_in, *tools;
    int n_parameters, max_turns;
    if (!PyArg_ParseTuple(args, "OiiO!", &menus_in, &n_parameters, &max_turns, &PyTuple_Type, &tools)) return NULL;
    int same = PyTuple_GET_SIZE(tools) == N_TOOLS;
    for (int t = 0; same && t < N_TOOLS; t++)
        same = PyUnicode_Check(PyTuple_GET_ITEM(tools, t)) &&
               PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(tools, t), NAMES[t]) == 0;
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "the tools are not the C file's, in its order");
        return NULL;
    }
    if (n_parameters < 1 || n_parameters > MAX_PARAMETERS) {
        PyErr_SetString(PyExc_ValueError, "too many parameters");
        return NULL;
    }
    PyObject *rows = fast(menus_in, N_CONTEXTS, "menus");
    if (rows == NULL) return NULL;
    for (int c = 0; c < N_CONTEXTS; c++) {
        PyObject *row = fast(PySequence_Fast_GET_ITEM(rows, c), 5, "context");
        PyObject *actions = row == NULL ? NULL : fast(PySequence_Fast_GET_ITEM(row, 1), -1, "actions");
        PyObject *params = actions == NULL ? NULL : fast(PySequence_Fast_GET_ITEM(row, 2), -1, "parameters");
        int bad = params == NULL || PySequence_Fast_GET_SIZE(actions) > 8 ||
                  PySequence_Fast_GET_SIZE(params) != PySequence_Fast_GET_SIZE(actions);
        for (int k = 0; k < 8; k++) ACTION_OF[c][k] = PARAM_OF[c][k] = -1;
        for (Py_ssize_t k = 0; !bad && k < PySequence_Fast_GET_SIZE(actions); k++) {
            long long a = 0, i = 0;
            if (get_int(actions, k, &a) < 0 || get_int(params, k, &i) < 0 || i >= n_parameters) bad = 1;
            ACTION_OF[c][k] = (int)a, PARAM_OF[c][k] = (int)i;
        }
        for (int v = 0; !bad && v < 2; v++) {
            PyObject *avail = PySequence_Fast_GET_ITEM(row, 3 + v);
            if (!PyTuple_Check(avail) || PyTuple_GET_SIZE(avail) < 1 || PyTuple_GET_SIZE(avail) > 8) bad = 1;
            else {
                Py_XSETREF(SETUP_AVAIL[c][v], Py_NewRef(avail));
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(avail); k++) {
                    long p = PyLong_AsLong(PyTuple_GET_ITEM(avail, k));
                    if (p < 0 || p >= PySequence_Fast_GET_SIZE(actions)) bad = 1;
                }
            }
        }
        if (!bad) Py_XSETREF(SETUP_CTX[c], Py_NewRef(PySequence_Fast_GET_ITEM(row, 0)));
        Py_XDECREF(row), Py_XDECREF(actions), Py_XDECREF(params);
        if (bad) {
            Py_DECREF(rows);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed menus");
            return NULL;
        }
    }
    Py_DECREF(rows);
    N_PARAMETERS = n_parameters;
    MAX_TURNS = max_turns;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(menus, n_parameters, max_turns, tools): the menu per context"},
    {"menus", menus_of, METH_O, "menus(table) -> the compiled menus read back"},
    {"table_of", table_of, METH_O, "table_of(theta) -> the compiled menus of the policy with these logits"},
    {"faults", make_faults, METH_VARARGS, "faults(rows, challenge) -> a noise configuration's fault tables"},
    {"fate", fate_of, METH_VARARGS, "fate(faults, prefix, tool, event, k) -> the compiled fate"},
    {"world_of", world_of, METH_VARARGS,
     "world_of(orders, products, customers, skus, statuses) -> a compiled initial world, or None"},
    {"task", make_task, METH_VARARGS,
     "task(world, specs, plan, oracle, n_keys) -> a compiled task, or None when its oracle plan fails"},
    {"table", make_table, METH_O, "table(rows) -> a policy's compiled menus"},
    {"play", (PyCFunction)(void (*)(void))play, METH_FASTCALL,
     "play(task, table, rng_random, fates, budget, forced, trace) -> (decisions, success, calls,"
     " budget_exceeded, exposed, score)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lean_episode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lean_episode(void) {
    init_constant_part();
    for (int k = 0; k < 16; k++) SMALL_INTS[k] = PyLong_FromLong(k);
    return PyModule_Create(&module);
}
