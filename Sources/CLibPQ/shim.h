#ifndef LOCIFY_CLIBPQ_SHIM_H
#define LOCIFY_CLIBPQ_SHIM_H

#include <libpq-fe.h>

/* Swift cannot import char-literal macros; re-export the diagnostic field codes we read. */
static const int LOCIFY_PG_DIAG_SEVERITY = 'S';
static const int LOCIFY_PG_DIAG_SEVERITY_NONLOCALIZED = 'V';
static const int LOCIFY_PG_DIAG_SQLSTATE = 'C';
static const int LOCIFY_PG_DIAG_MESSAGE_PRIMARY = 'M';
static const int LOCIFY_PG_DIAG_MESSAGE_DETAIL = 'D';
static const int LOCIFY_PG_DIAG_CONSTRAINT_NAME = 'n';
static const int LOCIFY_PG_DIAG_COLUMN_NAME = 'c';
static const int LOCIFY_PG_DIAG_TABLE_NAME = 't';

#endif
