/* zklock--1.4--1.5.sql: what zklock 1.5 adds to 1.4 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.5'" to load this file. \quit
