{#-
  The learning rate a warmup + decay schedule gives at `step`: linear warmup
  from 0 to peak over warmup_steps (step / warmup x peak), then cosine or linear
  decay from peak to min_lr over the steps up to decay_steps, then min_lr.
  Constant schedules hold peak after warmup. Unknown types give NULL.
-#}
{% macro scheduled_lr(step, schedule_type, peak_lr, min_lr, warmup_steps, decay_steps) %}
    case
        when {{ peak_lr }} is null or {{ schedule_type }} is null then null
        when {{ step }} < 0 then null
        when coalesce({{ warmup_steps }}, 0) > 0 and {{ step }} <= {{ warmup_steps }}
            then {{ peak_lr }} * {{ safe_divide(step, warmup_steps) }}
        when {{ schedule_type }} like '%constant%' then {{ peak_lr }}
        when {{ decay_steps }} is null then null
        when {{ step }} >= {{ decay_steps }} then coalesce({{ min_lr }}, 0)
        when {{ schedule_type }} like '%cosine%' then
            coalesce({{ min_lr }}, 0) + ({{ peak_lr }} - coalesce({{ min_lr }}, 0)) * 0.5 * (1 + cos(pi()
                * {{ safe_divide(step ~ ' - coalesce(' ~ warmup_steps ~ ', 0)', decay_steps ~ ' - coalesce(' ~ warmup_steps ~ ', 0)') }}))
        when {{ schedule_type }} like '%linear%' then
            coalesce({{ min_lr }}, 0) + ({{ peak_lr }} - coalesce({{ min_lr }}, 0)) * (1
                - {{ safe_divide(step ~ ' - coalesce(' ~ warmup_steps ~ ', 0)', decay_steps ~ ' - coalesce(' ~ warmup_steps ~ ', 0)') }})
    end
{% endmacro %}

{#- schedule types the rebuild understands -#}
{% macro is_supported_schedule(schedule_type) %}
    ({{ schedule_type }} like '%cosine%' or {{ schedule_type }} like '%linear%' or {{ schedule_type }} like '%constant%')
{% endmacro %}
