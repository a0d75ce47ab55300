(function(){
const table=document.getElementById('runs'),body=table.tBodies[0];
const rows=Array.prototype.slice.call(body.rows),heads=table.tHead.rows[0].cells;
const filter=document.getElementById('filter'),task=document.getElementById('task');
const shown=document.getElementById('shown');
function apply(){const words=filter.value.toLowerCase(),wanted=task.value;let count=0;
rows.forEach(function(row){const show=(!wanted||row.dataset.task===wanted)&&
row.textContent.toLowerCase().indexOf(words)>=0;row.hidden=!show;if(show)count++;});
shown.textContent=count+' of '+rows.length+' runs';}
Array.prototype.forEach.call(heads,function(head,column){head.addEventListener('click',function(){
const descending=head.classList.contains('asc'),numeric=head.hasAttribute('data-numeric');
Array.prototype.forEach.call(heads,function(h){h.classList.remove('asc','desc');});
head.classList.add(descending?'desc':'asc');
rows.sort(function(a,b){const x=a.cells[column],y=b.cells[column];
const order=numeric?parseFloat(x.dataset.sort)-parseFloat(y.dataset.sort):
x.textContent.localeCompare(y.textContent);return descending?-order:order;});
rows.forEach(function(row){body.appendChild(row);});});});
filter.addEventListener('input',apply);task.addEventListener('change',apply);apply();
})();
