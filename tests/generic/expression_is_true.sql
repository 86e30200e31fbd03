{#- expression_is_true: a boolean SQL expression holds on every row.
    arguments: expression (SQL over the model's columns); where (optional SQL filter on the rows
    checked; dbt lifts a `where` given under arguments into the test config, which filters the
    model alike); column_name (set by dbt when the test sits under a column: the expression is
    appended to it, e.g. '>= 0').
    fails with every row where the expression is false; a NULL result passes (as in a check constraint). -#}
{% test expression_is_true(model, expression, where=none, column_name=none) %}

with rows_in_scope as (

    select * from {{ model }}
    {%- if where %}
    where {{ where }}
    {%- endif %}

),

rows_failing_expression as (

    select * from rows_in_scope
    where not ({{ column_name ~ ' ' if column_name }}{{ expression }})

)

select * from rows_failing_expression

{% endtest %}
