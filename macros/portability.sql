{#- Cross-engine helpers. Engine-specific SQL lives here, one dispatch macro each. -#}

{% macro type_double() %}
  {{ return(adapter.dispatch('type_double', 'run_diagnosis')()) }}
{% endmacro %}
{% macro default__type_double() %}double precision{% endmacro %}
{% macro duckdb__type_double() %}double{% endmacro %}
{% macro spark__type_double() %}double{% endmacro %}

{#- a / b with a double on one side; NULL when b is 0 (DuckDB gives inf, Postgres raises) -#}
{% macro safe_divide(numerator, denominator) %}
  (cast({{ numerator }} as {{ type_double() }}) / nullif({{ denominator }}, 0))
{% endmacro %}

{#- parse text to a double: NULL when not a number; NaN/inf survive and are caught by is_non_finite
    (dbt.safe_cast is a plain cast on DuckDB, which fails the whole model on one bad cell) -#}
{% macro parse_double(column) %}
  {{ return(adapter.dispatch('parse_double', 'run_diagnosis')(column)) }}
{% endmacro %}
{% macro default__parse_double(column) %}try_cast(trim({{ column }}) as {{ type_double() }}){% endmacro %}
{#- Spark: try_cast (NULL on bad text whatever spark.sql.ansi.enabled says), after a check of
    the text's shape: Spark's cast alone also takes Java forms DuckDB refuses ('1.5d', '2f') -#}
{% macro spark__parse_double(column) %}
  case when trim({{ column }}) rlike '^(?i)[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?$|^(?i)[+-]?(nan|inf|infinity)$'
    then try_cast(trim({{ column }}) as double) end
{% endmacro %}
{% macro postgres__parse_double(column) %}
  case when trim({{ column }}) ~* '^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)(e[+-]?[0-9]+)?$|^[+-]?(nan|inf|infinity)$'
    then cast(trim({{ column }}) as double precision) end
{% endmacro %}

{#- a double rounded to `digits` decimals, as text the way DuckDB writes it ('0.00015', '84.0', 'nan');
    for fmt/fmt_pct (reason_list.sql): Spark's plain cast writes '1.5E-4' -#}
{% macro rounded_double_text(expression, digits) %}
  {{ return(adapter.dispatch('rounded_double_text', 'run_diagnosis')(expression, digits)) }}
{% endmacro %}
{% macro default__rounded_double_text(expression, digits) %}cast(round(cast({{ expression }} as {{ type_double() }}), {{ digits }}) as {{ dbt.type_string() }}){% endmacro %}
{% macro spark__rounded_double_text(expression, digits) %}
  {%- set value = 'round(cast(' ~ expression ~ ' as double), ' ~ digits ~ ')' -%}
  case
    when isnan({{ value }}) then 'nan'
    when {{ value }} > 1e300 then 'inf'
    when {{ value }} < -1e300 then '-inf'
    when abs({{ value }}) >= 1e15 then cast({{ value }} as string)
    {%- if digits | int > 0 %}
    else regexp_replace(regexp_replace(cast(cast({{ value }} as decimal(38, {{ digits }})) as string), '0+$', ''), '[.]$', '.0')
    {%- else %}
    else cast(cast({{ value }} as decimal(38, 0)) as string) || '.0'
    {%- endif %}
  end
{%- endmacro %}

{#- parse text to an integer step; '12.0' is 12, '12.5' or '1e30' is NULL -#}
{% macro parse_integer(column) %}
  case
    when {{ parse_double(column) }} is null then null
    when {{ parse_double(column) }} > 1e15 or {{ parse_double(column) }} < -1e15 then null
    when {{ parse_double(column) }} <> floor({{ parse_double(column) }}) then null
    else cast({{ parse_double(column) }} as {{ dbt.type_bigint() }})
  end
{% endmacro %}

{#- NaN and +/-inf compare greater than every finite double on DuckDB, Spark and Postgres -#}
{% macro is_non_finite(parsed) %}
  ({{ parsed }} is not null and ({{ parsed }} > 1e300 or {{ parsed }} < -1e300))
{% endmacro %}

{#- the finite value or NULL -#}
{% macro finite_or_null(parsed) %}
  case when {{ is_non_finite(parsed) }} then null else {{ parsed }} end
{% endmacro %}

{#- trimmed text, NULL when empty -#}
{% macro clean_text(column) %}
  nullif(trim({{ column }}), '')
{% endmacro %}

{#- first run of digits in text after the first occurrence of marker (both lower-case) -#}
{% macro number_after(text, marker) %}
  {{ return(adapter.dispatch('number_after', 'run_diagnosis')(text, marker)) }}
{% endmacro %}
{% macro default__number_after(text, marker) %}
  case when {{ marker }} is not null and {{ marker }} <> '' and position({{ marker }} in {{ text }}) > 0
    then cast(nullif(regexp_extract(
      substring({{ text }}, position({{ marker }} in {{ text }}) + length({{ marker }})),
      '^[^0-9]{0,12}([0-9]{1,15})', 1), '') as {{ dbt.type_bigint() }})
  end
{% endmacro %}
{% macro postgres__number_after(text, marker) %}
  case when {{ marker }} is not null and {{ marker }} <> '' and position({{ marker }} in {{ text }}) > 0
    then cast(substring(
      substring({{ text }}, position({{ marker }} in {{ text }}) + length({{ marker }})),
      '^[^0-9]{0,12}([0-9]{1,15})') as {{ dbt.type_bigint() }})
  end
{% endmacro %}

{#- SQL string literal with quotes escaped: paths with quotes cannot inject SQL -#}
{% macro sql_literal(text) %}{{ return(adapter.dispatch('sql_literal', 'run_diagnosis')(text)) }}{% endmacro %}
{% macro default__sql_literal(text) %}{{ return("'" ~ text | replace("'", "''") ~ "'") }}{% endmacro %}
{#- Spark reads a backslash in a literal as an escape ('a\tb' is a tab): double it -#}
{% macro spark__sql_literal(text) %}{{ return("'" ~ text | replace("\\", "\\\\") | replace("'", "''") ~ "'") }}{% endmacro %}
