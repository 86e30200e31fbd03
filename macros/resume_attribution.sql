{#- Per run, the last resume at most `window` steps before (or at) the first step of a problem,
    to which the problem is attributed (a resume that restored the wrong state). `resumes` has
    run_id and resume_step; `problems` has run_id and first_step. The body of a CTE. -#}
{% macro last_resume_before(resumes, problems, window) %}
    select {{ resumes }}.run_id, max({{ resumes }}.resume_step) as resume_step
    from {{ resumes }}
    inner join {{ problems }}
        on {{ resumes }}.run_id = {{ problems }}.run_id
    where {{ resumes }}.resume_step <= {{ problems }}.first_step
        and {{ resumes }}.resume_step >= {{ problems }}.first_step - {{ window }}
    group by {{ resumes }}.run_id
{%- endmacro %}
